"""Hostile runs of the real CLI, in real processes: SIGTERM, SIGKILL and Ctrl-C leave no child of
pista behind (the forked reader of a big trace, the workers of a folder's pool); --workers is
capped at the cores; a Dask scheduler that is not there, or not a scheduler, fails in one line and
fast; Ctrl-C under --engine dask is one line."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, fixture

from pista import forked
from pista.distributed.engine import SCHEDULER_TIMEOUT_S
from pista.trace.stream import PARALLEL_MIN_BYTES

PISTA = [sys.executable, "-m", "pista"]
# The brief's bound: a child of pista still running this long after the signal is an orphan.
GONE_WITHIN_S = 2.0
# After SIGKILL the parent runs nothing: only the kernel (PR_SET_PDEATHSIG) ends the children.
# A reader child on its own would read the rest of its half of the 64 MB trace first (~1.5 s).
KILLED_GONE_WITHIN_S = 0.5
START_WITHIN_S = 60.0  # how long the children may take to appear on a loaded machine

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    """Two ranks of one job, each the 64 MB GPT trace (uncompressed: past the size at which one
    file's read forks a second reader, and about a second of parsing: long enough to be signalled
    in the middle)."""
    raw = gzip.decompress(fixture("big_gpt_eager_20steps").read_bytes())
    brace = raw.index(b"{")
    folder = tmp_path_factory.mktemp("job")
    for rank in range(2):
        head = b'{"distributedInfo": {"backend": "nccl", "rank": %d, "world_size": 2},' % rank
        (folder / f"rank-{rank}.json").write_bytes(head + raw[brace + 1 :])
    assert (folder / "rank-0.json").stat().st_size > PARALLEL_MIN_BYTES
    return folder


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, process group) from /proc, None once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, ppid, group = text[text.rindex(")") + 2 :].split()[:3]
    return state, int(ppid), int(group)


def _processes() -> dict[int, tuple[str, int, int]]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            found[int(entry)] = stat
    return found


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = defaultdict(list)
    for child, (_, ppid, _) in _processes().items():
        children[ppid].append(child)
    found, todo = set(), [pid]
    while todo:
        for child in children[todo.pop()]:
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _living(pids: set[int]) -> set[int]:
    """The ones still running: a zombie has ended (whoever adopted it reaps it when it will)."""
    return {p for p in pids if (stat := _stat(p)) is not None and stat[0] != "Z"}


def _group(leader: int) -> set[int]:
    """Every process still running in `leader`'s group: pista and whatever it started, orphans
    included (adopted by init, they keep the group)."""
    return {pid for pid, (state, _, group) in _processes().items() if group == leader and state != "Z"}


def _signal_mid_run(args: list[str], sig: int, children: int, gone_within: float = GONE_WITHIN_S
                    ) -> tuple[int, str, set[int]]:
    """Start `pista ARGS`, wait for `children` processes under it, send `sig` to pista alone (as
    `kill PID` does): (exit code, stderr, the processes of its group, pista included, still running
    `gone_within` seconds after the signal)."""
    proc = _start(args, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_WITHIN_S
        while len(_living(_descendants(proc.pid))) < children:
            assert proc.poll() is None and time.monotonic() < deadline, f"no {children} children appeared"
            time.sleep(0.002)
        proc.send_signal(sig)
        sent = time.monotonic()
        while _group(proc.pid) and time.monotonic() < sent + gone_within:
            time.sleep(0.01)
        survivors = _group(proc.pid)
        _, err = proc.communicate(timeout=30)
        return proc.returncode, err.decode(), survivors
    finally:
        _end(proc)


def _start(args: list[str], stdout: int = subprocess.PIPE) -> subprocess.Popen:
    """`pista ARGS` in a process group of its own: _end can then kill whatever it left behind,
    orphans included (they keep the group)."""
    return subprocess.Popen(PISTA + args, stdout=stdout, stderr=subprocess.PIPE, start_new_session=True)


def _end(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _needs_two_cores() -> None:
    if not forked.can_fork():
        pytest.skip("one usable core: pista starts no child here")


@pytest.mark.parametrize("sig, within", [(signal.SIGTERM, GONE_WITHIN_S), (signal.SIGKILL, KILLED_GONE_WITHIN_S)])
def test_a_signal_to_analyze_of_a_big_trace_ends_its_reader_child(job, sig, within):
    _needs_two_cores()
    code, err, survivors = _signal_mid_run(["analyze", str(job / "rank-0.json")], sig, children=1,
                                           gone_within=within)
    assert survivors == set()
    assert code == -sig or (sig == signal.SIGTERM and code == 128 + sig), (code, err)
    assert "Traceback" not in err


# children=1: the signal lands while the pool forks its workers, where a handler's exception used
# to be dropped (raised inside an at-fork callback) and the run went on to the end.
@pytest.mark.parametrize("sig, children", [(signal.SIGTERM, 1), (signal.SIGTERM, 2), (signal.SIGKILL, 2)])
def test_a_signal_to_analyze_of_a_folder_ends_its_rank_workers(job, sig, children):
    # before: the pool's workers waited for their next rank forever, adopted by init
    _needs_two_cores()
    code, err, survivors = _signal_mid_run(["analyze", str(job)], sig, children=children)
    assert survivors == set()
    assert code == -sig or (sig == signal.SIGTERM and (code, err) == (128 + sig, "pista: terminated\n")), err


def test_ctrl_c_on_a_folder_is_one_line_and_ends_the_workers(job):
    _needs_two_cores()
    code, err, survivors = _signal_mid_run(["analyze", str(job)], signal.SIGINT, children=2)
    assert (code, err, survivors) == (130, "pista: interrupted\n", set())


def test_workers_are_capped_at_the_usable_cores(job):
    # before: --workers 100000 forked a process per rank queued, thousands for a big folder
    cores = forked.usable_cores()
    proc = _start(["analyze", str(job), "--workers", "100000", "--format", "json"])
    most, deadline = 0, time.monotonic() + START_WITHIN_S
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            most = max(most, len(_living(_descendants(proc.pid))))
            time.sleep(0.005)
        assert most <= cores
        out, err = proc.communicate(timeout=START_WITHIN_S)
    finally:
        _end(proc)
    assert proc.returncode == 0, err
    notices = json.loads(out)["notices"]
    assert any(n.startswith(f"--workers 100000: this machine lets pista use {cores} core(s)") for n in notices)


# -- Dask ---------------------------------------------------------------------------------------


def _one_line_failure(argv: list[str]) -> tuple[str, float]:
    start = time.monotonic()
    done = subprocess.run(PISTA + argv, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - start
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("pista: error: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr, elapsed


def _dask_argv(address: str) -> list[str]:
    return ["analyze", str(FIXTURES / "gloo" / "balanced_2"), "--engine", "dask", "--scheduler", address]


def test_a_scheduler_address_nobody_listens_on_fails_at_once():
    pytest.importorskip("distributed")
    with socket.socket() as sock:  # a port that was free a moment ago: connections are refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    err, elapsed = _one_line_failure(_dask_argv(f"tcp://127.0.0.1:{port}"))
    assert "cannot reach the Dask scheduler" in err and "refused" in err
    assert elapsed < 15  # Dask alone retried for its 30 s timeout


@pytest.fixture
def stranger() -> Iterator[tuple[socket.socket, list[bytes]]]:
    """A TCP server that is no Dask scheduler; the test says what it answers."""
    server = socket.create_server(("127.0.0.1", 0))
    answers: list[bytes] = []
    held = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            if answers:
                conn.sendall(answers[0])

    threading.Thread(target=serve, daemon=True).start()
    yield server, answers
    server.close()
    for conn in held:
        conn.close()


@pytest.mark.parametrize("answer", [b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", b""])
def test_a_server_that_is_no_scheduler_fails_in_one_line(stranger, answer):
    # before: garbage read as a frame length was 'out of memory' plus a traceback 60 s later at
    # exit; silence held Dask's handshake forever
    pytest.importorskip("distributed")
    server, answers = stranger
    answers.append(answer)
    err, elapsed = _one_line_failure(_dask_argv(f"tcp://127.0.0.1:{server.getsockname()[1]}"))
    assert "cannot use the Dask scheduler" in err and "is a Dask scheduler listening there?" in err
    assert elapsed < SCHEDULER_TIMEOUT_S + 15


@pytest.fixture(scope="module")
def idle_scheduler(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """A real Dask scheduler with no worker: a job sent there waits forever, so a signal always
    lands while pista waits for its ranks. Its log goes to a file the tests read."""
    pytest.importorskip("distributed")
    folder = tmp_path_factory.mktemp("dask")
    info, log = folder / "scheduler.json", folder / "scheduler.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                 "--port", "0", "--no-dashboard", "--scheduler-file", str(info)],
                                stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_WITHIN_S
        while not info.exists() or not info.read_text().strip():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield json.loads(info.read_text())["address"], log
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("sig, code, line", [(signal.SIGINT, 130, "pista: interrupted\n"),
                                             (signal.SIGTERM, 143, "pista: terminated\n")])
def test_a_signal_under_dask_is_one_line(idle_scheduler, sig, code, line):
    # before: Ctrl-C printed 'Task exception was never retrieved' and a traceback per rank
    address, log = idle_scheduler
    clients_before = len(re.findall("Receive client connection", log.read_text()))
    proc = _start(_dask_argv(address), stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_WITHIN_S
        while len(re.findall("Receive client connection", log.read_text())) == clients_before:
            assert proc.poll() is None and time.monotonic() < deadline, "pista never reached the scheduler"
            time.sleep(0.05)
        time.sleep(0.5)  # the ranks sent, pista waits for them
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        _end(proc)
    assert (proc.returncode, err.decode()) == (code, line)
