"""Run one function in a forked child while this process goes on: the second core for a big
trace's read and for its heaviest rules. A fork shares the parent's memory (the trace columns)
without copying; only the result travels back through a pipe: pickled, with its numpy buffers
sent out of band (pickle protocol 5), so the child never holds a second copy of its columns."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Any


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
        self._receiver.close()
        if kill and self._child.is_alive():
            self._child.terminate()
        self._child.join()


class ChildFailed(Exception):
    """What went wrong in the child, as text (its exception may not pickle)."""


def can_fork() -> bool:
    return (os.cpu_count() or 1) >= 2 and hasattr(os, "fork")


def fork_call(target: Callable[..., Any], *args: Any) -> Forked | None:
    """Start `target(*args)` in a forked child; None where no child can be had (no fork, one
    core, or this is a pool's daemon worker, which may not have children)."""
    if not can_fork():
        return None
    import multiprocessing  # only here: importing it costs a small trace's load time

    if multiprocessing.current_process().daemon:
        return None
    try:
        ctx = multiprocessing.get_context("fork")
        receiver, sender = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_run, args=(target, args, sender), daemon=True)
        child.start()
    except (ValueError, OSError, AssertionError):
        return None
    sender.close()
    return Forked(child, receiver)


def _run(target: Callable[..., Any], args: tuple[Any, ...], sender: Any) -> None:
    try:
        outcome = target(*args)
    except Exception as err:  # noqa: BLE001 - reported to the parent, which decides
        outcome = ChildFailed(f"{type(err).__name__}: {err}")
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
    finally:
        sender.close()
