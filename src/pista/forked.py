"""Run one function in a forked child while this process goes on: the second core for a big
trace's read and for its heaviest rules. A fork shares the parent's memory (the trace columns)
without copying; only the result travels back through a pipe: pickled, with its numpy buffers
sent out of band (pickle protocol 5), so the child never holds a second copy of its columns."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

# Set in processes that must not fork (a pool's rank workers: the pool already fills the cores).
DISABLED = False
# How long to wait for a child that sent its result, or was told to stop, to be gone.
JOIN_TIMEOUT_S = 5.0
# prctl(2) option: the signal the kernel sends this process when its parent dies (Linux only).
_PR_SET_PDEATHSIG = 1
# The signals that unwind pista (Ctrl-C, SIGTERM: their handlers raise). Held back while a child
# is forked: raised inside fork's at-fork callbacks (logging's lock release), the exception is
# printed and dropped, and the run goes on as if it had never been signalled.
_UNWINDING = {signal.SIGINT, signal.SIGTERM}


class Forked:
    """A child running `target(*args)`; `result()` waits for its return value, re-raising in
    this process what the child raised as `ChildFailed`."""

    def __init__(self, child: Any, receiver: Any) -> None:
        self._child = child
        self._receiver = receiver

    def result(self) -> Any:
        outcome = None
        try:
            head = self._receiver.recv_bytes()
            count = int.from_bytes(head[:8], "little")
            buffers = [self._receiver.recv_bytes() for _ in range(count)]
            outcome = pickle.loads(head[8:], buffers=buffers)
        except EOFError:
            outcome = ChildFailed("the child process ended without a result")
        finally:
            self.cancel(kill=outcome is None)
        if isinstance(outcome, ChildFailed):
            raise outcome
        return outcome

    def cancel(self, kill: bool = True) -> None:
        """Close the pipe and reap the child; `kill` stops one still working. A child that sent
        its result ends at once (os._exit), so the timeout is only a guard against a stuck one."""
        self._receiver.close()
        if kill and self._child.is_alive():
            self._child.terminate()
        self._child.join(JOIN_TIMEOUT_S)
        if self._child.is_alive():
            self._child.kill()
            self._child.join(JOIN_TIMEOUT_S)


class ChildFailed(Exception):
    """What went wrong in the child, as text (its exception may not pickle)."""


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask: taskset, cgroups' cpusets), not the
    machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    """A second core to use and a fork that is safe: another Python thread may hold a lock (the
    stdout buffer's, the logging module's) that a forked child would wait on forever."""
    return not DISABLED and hasattr(os, "fork") and usable_cores() >= 2 and other_threads() == 0


def other_threads() -> int:
    """Python threads running besides this one."""
    threading = sys.modules.get("threading")
    return 0 if threading is None else threading.active_count() - 1


def fork_call(target: Callable[..., Any], *args: Any) -> Forked | None:
    """Start `target(*args)` in a forked child; None where no child can be had (no fork, one
    core, other threads running, or this is a pool's worker, which may not or should not have
    children)."""
    if not can_fork():
        return None
    import multiprocessing  # only here: importing it costs a small trace's load time

    if multiprocessing.current_process().daemon:
        return None
    try:
        ctx = multiprocessing.get_context("fork")
        receiver, sender = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_run, args=(target, args, sender, receiver, os.getpid()),
                            daemon=True)
        with signals_held():
            child.start()
    except (ValueError, OSError, AssertionError):
        return None
    sender.close()
    return Forked(child, receiver)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block ends (around forks: see _UNWINDING). A child forked
    inside starts with them blocked too: it calls release_signals()."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _UNWINDING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def release_signals() -> None:
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _UNWINDING)


def die_with_parent(parent: int) -> None:
    """In a child of `parent` (its pid, taken before the fork): end when the parent ends, however
    it ends. A parent killed by SIGTERM or SIGKILL runs no cleanup, and a child reading the second
    half of a big trace (or a pool's worker waiting for its next rank, forever) would outlive it.
    Linux only: elsewhere the parent's own cleanup (Forked.cancel, the pool's shutdown) is all
    there is."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes  # numpy has loaded it already: no cost here

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect: nobody waits for us
        os._exit(1)


def _run(target: Callable[..., Any], args: tuple[Any, ...], sender: Any, receiver: Any, parent: int) -> None:
    """The child: compute, send, and leave with os._exit, so nothing of the parent's state runs at
    exit (atexit hooks, flushing a copy of the parent's unwritten stdout a second time)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops us
    die_with_parent(parent)
    release_signals()
    receiver.close()
    try:
        outcome = target(*args)
    except BaseException as err:  # noqa: BLE001 - reported to the parent, which decides
        outcome = ChildFailed(f"{type(err).__name__}: {err}")
    code = 0
    try:
        buffers: list[pickle.PickleBuffer] = []
        try:
            data = pickle.dumps(outcome, protocol=5, buffer_callback=buffers.append)
        except Exception as err:  # noqa: BLE001 - an unpicklable result is a failure like any other
            buffers = []
            data = pickle.dumps(ChildFailed(f"the result does not pickle: {err}"), protocol=5)
        sender.send_bytes(len(buffers).to_bytes(8, "little") + data)
        for buffer in buffers:
            sender.send_bytes(buffer.raw())
    except BaseException:  # noqa: BLE001 - the parent sees a pipe closed early: ChildFailed
        code = 1
    finally:
        os._exit(code)
