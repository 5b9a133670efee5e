"""What:
Host<->device copies from or into pageable (ordinary, unpinned) host memory: the GPU lane shows
`Memcpy HtoD (Pageable -> Device)` or `Memcpy DtoH (Device -> Pageable)`, and the host's
cudaMemcpyAsync lasts as long as the copy itself because it cannot return early.

Why:
The DMA engine can only read pinned (page-locked) memory, so the driver stages a pageable buffer
through a pinned bounce buffer chunk by chunk: the copy runs at a fraction of PCIe/NVLink-C2C
speed, the "async" call blocks the host for its whole length, and it cannot overlap compute.

Example:
gpu/pageable_memcpy on an H200: a 64 MiB `tensor.to("cuda")` from pageable memory takes 9.55 ms on
the GPU (7.0 GB/s) and blocks the host 9.73 ms in cudaMemcpyAsync; the same copy from pinned
memory with `non_blocking=True` takes 1.21 ms (55 GB/s) and returns to the host after 19.5 µs.
The 64 MiB `.cpu()` into pageable memory takes 47.9 ms (1.4 GB/s).

Fix:
Allocate host buffers pinned (`torch.empty(..., pin_memory=True)`, `tensor.pin_memory()`,
`DataLoader(pin_memory=True)`) and copy with `non_blocking=True`; for read-backs, copy into a
preallocated pinned tensor with `non_blocking=True` and wait on an event only when the value is used.
"""

from __future__ import annotations

import re

import numpy as np

from pista.findings import Context, Evidence, Finding, Severity, legacy_finding
from pista.rules._common import fmt_ns, memcpys, nearest_ancestor, pattern_mask

ID = "pageable-memcpy"
TITLE = "Copies between the GPU and pageable host memory"
SEVERITY = Severity.WARNING
# Copies smaller than this are ignored: scalars and small index tensors (`torch.tensor([...]).cuda()`)
# are pageable everywhere and cheap; the smallest real transfer in the fixtures is
# gpu/gpu_idle_dataloader's 2 MiB batch copy (134 µs at 15.7 GB/s).
MIN_COPY_BYTES = 1 << 20
# ... and together the large pageable copies must block the host at least this long (µs):
# gpu/gpu_idle_dataloader 737 µs over 3 steps, gpu/pageable_memcpy 180 ms.
MIN_BLOCKED_US = 50.0
EVIDENCE_EVENTS = 6

PAGEABLE = re.compile(r"Pageable")
PINNED = re.compile(r"Pinned")
DIRECTION = re.compile(r"^Memcpy (\w+)")


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    trace = facts.trace
    copies = memcpys(facts)
    pageable = np.flatnonzero(copies & pattern_mask(facts, PAGEABLE))
    if facts.steps:
        pageable = pageable[facts.event_step[pageable] >= 0]
    if pageable.size == 0:
        return []
    size = np.array([_bytes(trace, i) for i in pageable.tolist()], dtype=np.int64)
    pageable, size = pageable[size >= MIN_COPY_BYTES], size[size >= MIN_COPY_BYTES]
    if pageable.size == 0:
        return []
    launcher = facts.launcher[pageable]
    blocked = np.where(launcher >= 0, trace.dur[np.maximum(launcher, 0)], 0)
    if blocked.sum() / 1000.0 < MIN_BLOCKED_US:
        return []

    pinned_rate = _pinned_bandwidth(facts, copies)
    regions = nearest_ancestor(facts, facts.is_host & trace.category_mask({"user_annotation"})
                               & ~pattern_mask(facts, re.compile(r"^ProfilerStep#")), inclusive=False)
    parts, per_dir = [], {}
    for direction in sorted({_direction(trace, i) for i in pageable.tolist()}):
        sel = np.array([_direction(trace, i) == direction for i in pageable.tolist()])
        n, nbytes, dev_ns, host_ns = int(sel.sum()), int(size[sel].sum()), int(trace.dur[pageable[sel]].sum()), \
            int(blocked[sel].sum())
        rate = nbytes / dev_ns if dev_ns else 0.0  # bytes/ns == GB/s
        where = sorted({trace.event_name(int(regions[j])) for j in launcher[sel] if j >= 0 and regions[j] >= 0})
        side = "into" if direction == "DtoH" else "from"
        text = (f"{n} {direction} cop{'y' if n == 1 else 'ies'} {side} pageable memory "
                f"({nbytes / 2**20:.1f} MiB{', in ' + ', '.join(repr(w) for w in where) if where else ''}): "
                f"{fmt_ns(dev_ns)} on the GPU at {rate:.1f} GB/s, the host blocked {fmt_ns(host_ns)} in the copy calls")
        if direction in pinned_rate:
            text += f" (pinned {direction} copies in this trace: {pinned_rate[direction]:.1f} GB/s)"
        parts.append(text)
        per_dir[direction] = {"copies": n, "bytes": nbytes, "device_us": dev_ns / 1000.0,
                              "host_blocked_us": host_ns / 1000.0, "bandwidth_gb_s": rate,
                              "pinned_bandwidth_gb_s": pinned_rate.get(direction)}

    evidence = []
    for k in _round_robin(trace, pageable)[: EVIDENCE_EVENTS // 2]:
        i = int(pageable[k])
        rate = size[k] / trace.dur[i] if trace.dur[i] else 0.0
        evidence.append(Evidence.of(facts, i, detail=f"{size[k] / 2**20:.1f} MiB at {rate:.1f} GB/s"))
        if launcher[k] >= 0:
            evidence.append(Evidence.of(facts, int(launcher[k]), detail="host call blocked for the whole copy"))
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message="; ".join(parts) + ".",
        advice=("Pin the host buffers (pin_memory=True, DataLoader(pin_memory=True)) and copy with "
                "non_blocking=True so the copy runs at full speed and overlaps compute."),
        evidence=evidence,
        metrics={
            "copies": int(pageable.size),
            "bytes": int(size.sum()),
            "device_us": float(trace.dur[pageable].sum()) / 1000.0,
            "host_blocked_us": float(blocked.sum()) / 1000.0,
            "directions": per_dir,
        },
    )]


def _round_robin(trace, pageable: np.ndarray) -> list[int]:
    """Positions of the copies, longest first within each direction, the directions interleaved."""
    order = np.argsort(-trace.dur[pageable], kind="stable").tolist()
    by_dir: dict[str, list[int]] = {}
    for k in order:
        by_dir.setdefault(_direction(trace, int(pageable[k])), []).append(k)
    lists = list(by_dir.values())
    return [lst[r] for r in range(max(map(len, lists))) for lst in lists if r < len(lst)]


def _bytes(trace, i: int) -> int:
    value = trace.args(i).get("bytes")
    return int(value) if isinstance(value, (int, float)) else 0


def _direction(trace, i: int) -> str:
    match = DIRECTION.match(trace.event_name(i))
    return match.group(1) if match else "?"


def _pinned_bandwidth(facts, copies: np.ndarray) -> dict[str, float]:
    """GB/s of the large pinned copies per direction, to compare against."""
    trace = facts.trace
    out: dict[str, list[tuple[int, int]]] = {}
    for i in np.flatnonzero(copies & pattern_mask(facts, PINNED)).tolist():
        nbytes = _bytes(trace, i)
        if nbytes >= MIN_COPY_BYTES and trace.dur[i] > 0:
            out.setdefault(_direction(trace, i), []).append((nbytes, int(trace.dur[i])))
    return {d: sum(b for b, _ in v) / sum(t for _, t in v) for d, v in out.items()}
