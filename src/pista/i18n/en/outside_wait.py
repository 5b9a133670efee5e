"""outside-wait in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.outside_wait import BlockedCall, OutsideWait, WaitNote

TITLE = "The host blocks with nothing queued on the GPU: it waits on work the trace does not hold"


def _call(c: BlockedCall) -> str:
    where = f" in {c.op}" if c.op else ""
    step = f", step {c.step}" if c.step is not None else ""
    return f"{c.name}{where} {t(c.dur_us)} (GPU busy {t(c.busy_us)}{step})"


def message(r: OutsideWait) -> str:
    return (f"{r.calls} call(s) block the host {t(r.blocked_us / max(r.steps, 1))} per step, "
            f"{r.step_share_percent:.1f}% of the step, while the GPU runs nothing and has nothing queued: "
            f"{'; '.join(_call(c) for c in r.longest)}. No work the trace holds was running: the call waits on "
            "something outside it (another process or thread using the GPU, a lock, a server's scheduler "
            "overlapping the previous request). pista cannot tell what, nor what removing it would save.")


def advice(r: OutsideWait) -> str:
    return ("Profile the other side: the thread or process that holds the GPU or the lock (a server's scheduler, "
            "another rank, a data pipeline), with the profiler following every thread. If the wait is by design "
            "(an overlapped scheduler waiting for its next batch), profile a window of steady work instead.")


def fix(r: OutsideWait) -> str:
    c = r.longest[0]
    return (f"{c.name} blocks the host {t(c.dur_us)} with nothing queued on the GPU: find what it waits on outside "
            "this trace (another thread or process)")


def basis(r: OutsideWait) -> str:
    return "none claimed: the wait is on work the trace does not hold (its time is in the message)"


NOTES = {
    WaitNote: lambda n: (f"the host blocked with the GPU busy {t(n.busy_us)}"
                         + (f", in {n.op}" if n.op else "")),
}
