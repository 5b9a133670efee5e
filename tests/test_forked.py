"""Rules run in a forked child on big traces: the same findings as in one process, and a child
that fails costs nothing but time."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pista.findings as findings_module
from pista import forked
from pista.render import json as json_renderer
from pista.rules import kernel_variability

TRACES = ["big_gpt_eager_20steps", "gpu/kernel_variability", "seed_mm64_cold"]


def _analysis_json(facts, monkeypatch, min_events: int) -> str:
    monkeypatch.setattr(findings_module, "FORK_MIN_EVENTS", min_events)
    return json_renderer.render(findings_module.analyze(facts))


@pytest.mark.parametrize("name", TRACES)
def test_forked_rules_find_what_one_process_finds(load_facts, monkeypatch, name):
    facts = load_facts(name)
    calls = []
    real_fork = forked.fork_call

    def fork_and_note(*args):
        child = real_fork(*args)
        calls.append((args[2], child is not None))
        return child

    monkeypatch.setattr(forked, "fork_call", fork_and_note)
    in_one = _analysis_json(facts, monkeypatch, 10**12)
    assert calls == []
    split = _analysis_json(facts, monkeypatch, 0)
    assert calls == [(list(findings_module.FORKED_RULES), forked.can_fork())]
    assert forked.can_fork() or forked.usable_cores() < 2, "forking is possible here and must be tested"
    assert split == in_one
    assert '"kernel-variability"' in in_one or name != "gpu/kernel_variability"


def test_a_failing_child_is_replaced_by_a_run_here(load_facts, monkeypatch):
    facts = load_facts("gpu/kernel_variability")
    expected = _analysis_json(facts, monkeypatch, 10**12)
    parent = os.getpid()
    real_check = kernel_variability.check

    def only_here(ctx):
        if os.getpid() != parent:
            raise RuntimeError("the child broke")
        return real_check(ctx)

    monkeypatch.setattr(kernel_variability, "check", only_here)
    assert _analysis_json(facts, monkeypatch, 0) == expected


def _analyze_with_a_broken_rule(facts, monkeypatch, rule_module, message: str) -> None:
    """analyze() on a forking run whose `rule_module` raises ZeroDivisionError(message)."""

    def broken(ctx):
        raise ZeroDivisionError(message)

    monkeypatch.setattr(rule_module, "check", broken)
    monkeypatch.setattr(findings_module, "FORK_MIN_EVENTS", 0)
    with pytest.raises(ZeroDivisionError, match=message):
        findings_module.analyze(facts)


def test_an_error_in_a_rule_surfaces_as_itself(load_facts, monkeypatch):
    _analyze_with_a_broken_rule(load_facts("seed_mm64_warm"), monkeypatch, kernel_variability, "a rule bug")


def test_fork_call_returns_the_value_and_reports_failure():
    child = forked.fork_call(sum, [1, 2, 3])
    if child is None:
        pytest.skip("no fork on this machine")
    assert child.result() == 6
    failing = forked.fork_call(int, "not a number")
    with pytest.raises(forked.ChildFailed, match="ValueError"):
        failing.result()


def test_a_rule_failing_here_stops_the_child(load_facts, monkeypatch):
    import multiprocessing

    from pista.rules import dominant_event

    _analyze_with_a_broken_rule(load_facts("gpu/kernel_variability"), monkeypatch, dominant_event, "a rule bug here")
    assert multiprocessing.active_children() == []


def test_no_fork_while_another_thread_runs(load_facts, monkeypatch):
    """Another thread may hold a lock (stdout's, logging's) that a forked child would wait on."""
    import threading

    facts = load_facts("gpu/kernel_variability")
    expected = _analysis_json(facts, monkeypatch, 10**12)
    release = threading.Event()
    waiting = threading.Thread(target=release.wait)
    waiting.start()
    try:
        assert forked.fork_call(sum, [1]) is None
        assert _analysis_json(facts, monkeypatch, 0) == expected
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
