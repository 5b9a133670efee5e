"""pageable-memcpy in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.pageable_memcpy import BlockedCopyCall, CopyGroup, PageableCopy, PageableMemcpy

TITLE = "Copies between the GPU and pageable host memory"

# A copy this small (MiB per call) is a tensor built on the host each step: build it on the GPU.
SMALL_MIB = 1.0


def _where(g: CopyGroup) -> str:
    return f"{g.op} in '{g.region}'" if g.region else g.op


def _kind(g: CopyGroup) -> str:
    side = "into" if g.direction == "DtoH" else "from"
    return f"{g.copies} {g.direction} cop{'y' if g.copies == 1 else 'ies'} {side} pageable memory"


def _group(g: CopyGroup) -> str:
    pinned = f" (pinned {g.direction} copies in this trace: {g.pinned_gb_s:.1f} GB/s)" if g.pinned_gb_s else ""
    return (f"{_where(g)}: {_kind(g)} ({g.mib:.1f} MiB), {t(g.device_us)} on the GPU at {g.gb_s:.1f} GB/s{pinned}; "
            f"the host blocked {t(g.blocked_us)}, {_saved(g.saved_us, g.direction == 'DtoH')}")


def _saved(saved_us: float, read_back: bool, why: bool = True) -> str:
    if read_back:
        return (f"{t(saved_us)} of it staging through pageable memory"
                + (" (a pinned read-back still waits for its copy and the work queued before it)" if why else ""))
    return f"{t(saved_us)} of it with the GPU computing nothing"


def message(r: PageableMemcpy) -> str:
    text = (f"{'; '.join(_group(g) for g in r.groups)}. Together {t(r.saved_us / r.steps)} per step, "
            f"{r.step_share_percent:.1f}% of the step time.")
    return text


def _change(g: CopyGroup) -> str:
    if g.direction == "DtoH":
        return ("copy into a preallocated pinned tensor (dst.copy_(src, non_blocking=True)) and wait on a CUDA "
                "event only where the values are used")
    if g.loader:
        return ("load in a DataLoader with pin_memory=True and copy with .to('cuda', non_blocking=True) (its pin-memory "
                "thread pins the batches beside the step; .pin_memory() on each batch in the loop allocates page-locked memory "
                "every step and can be slower than the pageable copy)")
    if g.mib / max(g.copies, 1) < SMALL_MIB:
        return ("build the tensor on the GPU (torch.tensor(..., device='cuda')) or keep it in pinned memory "
                "and copy with non_blocking=True")
    return ("keep the source in pinned memory (tensor.pin_memory() once, outside the loop) and copy with "
            "non_blocking=True; for a batch built anew each step, copy it into one preallocated pinned buffer "
            "(buf.copy_(batch)) or build it in DataLoader workers with pin_memory=True: .pin_memory() on each "
            "batch allocates page-locked memory every step and can be slower than the pageable copy")


def advice(r: PageableMemcpy) -> str:
    g = r.groups[0]
    text = f"For {_where(g)}: {_change(g)}."
    if g.direction == "HtoD":
        text += (" A pinned copy runs at full bus speed and returns to the host at once, so it overlaps the GPU's "
                 "work instead of blocking the host.")
    if len(r.groups) > 1:
        text += " The same for " + ", ".join(_where(o) for o in r.groups[1:]) + "."
    return text


def fix(r: PageableMemcpy) -> str:
    g = r.groups[0]
    side = "into" if g.direction == "DtoH" else "from"
    return (f"{_where(g)} copies {g.mib / max(g.copies, 1):.1f} MiB per call {side} pageable memory, blocking the "
            f"host {t(g.blocked_us / r.steps)} per step ({_saved(g.saved_us / r.steps, g.direction == 'DtoH', why=False)}): "
            f"{_change(g)}.")


def basis(r: PageableMemcpy) -> str:
    return ("host blocked in the pageable copies' calls while the GPU computed nothing, up to the next device work "
            "(a read-back's at most its staging, the copy's time beyond a pinned one's), per step (upper bound: a "
            "pinned copy still occupies the copy engine)")


NOTES = {
    PageableCopy: lambda n: (f"{n.mib:.1f} MiB at {n.gb_s:.1f} GB/s"
                             + (f" (pinned copies here: {n.pinned_gb_s:.1f} GB/s)" if n.pinned_gb_s else "")),
    BlockedCopyCall: lambda n: (f"its op blocked the host {t(n.blocked_us)} (copy call and stream sync), "
                                f"{_saved(n.saved_us, n.read_back)}"),
}
