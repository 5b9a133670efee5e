"""queued-wait in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.queued_wait import QueuedWait, StallNote

TITLE = "The GPU idles with its next work already queued: it waits on something the trace does not show"

_NEXT = {
    "graph": "before the first recorded node of a CUDA graph replay",
    "collective": "before a collective",
    "stream": "before other queued work on a stream",
}


def _step(r: QueuedWait) -> str:
    return "step" if r.has_steps else "window"


def _inside(r: QueuedWait) -> str:
    lo, hi = r.ahead_ms
    ends = ", ".join(f"{t(v)} {_NEXT[k]}" for k, v in r.by_next)
    return (f"{t(r.stall_us)} per {_step(r)} in {r.stalls:.0f} stretch(es) (the longest {t(r.longest_us)}) the GPU runs "
            f"nothing while the work that ends each stretch had been launched before it began, {lo:.1f}-{hi:.1f} ms "
            f"before it ran: the host was not what the GPU waited for. Per {_step(r)}: {ends}. Something the trace does "
            "not show held the GPU: a stream waiting on an event (cudaStreamWaitEvent) for another stream or another "
            "rank, a collective's peers, or graph nodes the profiler did not record (then the GPU was not idle at all).")


def _first(r: QueuedWait) -> str:
    return (f"The window's first recorded device work ({r.first_name}), launched at +{t(r.first_launch_at_us)}, runs "
            f"only at +{t(r.first_start_at_us)}: for {t(r.first_wait_us)} the GPU has its work queued and nothing "
            f"recorded. From then it is busy {r.busy_after_percent:.0f}% of the rest of the window, while the host had "
            f"launched everything by +{t(r.host_done_at_us)}: the GPU, not the host, sets this window's time, and the "
            "idle before its first work is work or a wait the trace does not hold (work launched before the profiler "
            "started, such as a server's previous batch, or another process on the GPU).")


def message(r: QueuedWait) -> str:
    parts = [_inside(r)] if r.stall_us > 0 else []
    if r.first_wait_us > 0:
        parts.append(_first(r))
    return " ".join(parts)


def advice(r: QueuedWait) -> str:
    text = ""
    if r.stall_us > 0:
        text = ("Find what the GPU waits on before optimising the host: fusing, compiling or moving host work does not "
                "shorten this idle. Look at the streams' cudaStreamWaitEvent calls just before it and at what their "
                "events wait for; with a collective behind it, compare the other ranks' traces at the same moment (the "
                "last rank to arrive sets the wait); for CUDA graph replays, profile once with the graphs off, or with "
                "a profiler that records graph nodes, to see what their first nodes do. The saving shown is what "
                "removing the wait would give at most. ")
    if r.first_wait_us > 0:
        text += ("Read this window as GPU-bound: to see what the GPU runs first, start the profiler before the work it "
                 "measures is launched, or profile a longer window with torch.profiler.schedule(wait=..., warmup=...); "
                 "the host's side is not what to speed up here.")
    return text.strip()


def fix(r: QueuedWait) -> str:
    if r.stall_us > 0:
        top = _NEXT[r.by_next[0][0]] if r.by_next else ""
        return (f"the GPU waits {t(r.stall_us)} per {_step(r)} with its next work queued (most {top}): find the "
                "dependency (stream events, other ranks, graph nodes) before optimising the host")
    return (f"the GPU's first recorded work waits {t(r.first_wait_us)} after its launch with nothing recorded: the "
            "window is GPU-bound; profile one that starts before the GPU's queue")


def basis(r: QueuedWait) -> str:
    if r.stall_us > 0:
        return ("the steps replayed with the work that waited through such an idle run as soon as it is launched and "
                "its stream is free; upper bound")
    return "none claimed: the trace holds nothing of what the GPU ran or waited for before its first recorded work"


_KIND = {"graph": "a CUDA graph replay's node", "collective": "a collective", "stream": "queued work",
         "first": "the window's first recorded work"}

NOTES = {
    StallNote: lambda n: (f"GPU idle {t(n.idle_us)} with {_KIND[n.next_kind]} launched {t(n.ahead_us)} before it ran"),
}
