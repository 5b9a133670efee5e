"""pista.forked, which the streamed reader's second process and the rank workers use: a child
returns its value or says how it failed, never forks beside another thread, dies with its parent."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pista import forked


def test_fork_call_returns_the_value_and_reports_failure():
    child = forked.fork_call(sum, [1, 2, 3])
    if child is None:
        pytest.skip("no fork on this machine")
    assert child.result() == 6
    failing = forked.fork_call(int, "not a number")
    with pytest.raises(forked.ChildFailed, match="ValueError"):
        failing.result()


def test_no_fork_while_another_thread_runs():
    """Another thread may hold a lock (stdout's, logging's) that a forked child would wait on."""
    import threading

    release = threading.Event()
    waiting = threading.Thread(target=release.wait)
    waiting.start()
    try:
        assert forked.fork_call(sum, [1]) is None
    finally:
        release.set()
        waiting.join()


def test_the_affinity_mask_counts_not_the_machine(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert forked.usable_cores() == 1
    assert forked.fork_call(sum, [1]) is None


def test_the_child_ignores_ctrl_c_and_still_answers():
    import signal
    import time

    child = forked.fork_call(time.sleep, 0.5)
    if child is None:
        pytest.skip("no fork on this machine")
    time.sleep(0.1)
    os.kill(child._child.pid, signal.SIGINT)
    assert child.result() is None  # time.sleep's return value: the child finished its work



def _running(pid: int) -> bool:
    """Linux /proc: there and not a zombie (an orphan's zombie waits for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_forked_child_dies_with_its_parent():
    # SIGKILL (an OOM killer, a job scheduler) gives the parent no clean-up: before, the child
    # went on with its work, adopted by init; now the kernel ends it with the parent
    script = ("import time\nfrom pista import forked\nchild = forked.fork_call(time.sleep, 60)\n"
              "print(child._child.pid if child else 0, flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        pid = int(proc.stdout.readline())
        if not pid:
            pytest.skip("no fork on this machine")
        assert _running(pid)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 2.0
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _running(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group this test made: the child too, if it lived
        proc.wait()
