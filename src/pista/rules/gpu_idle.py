"""What:
GPU idle inside the steps under a record_function region that runs for milliseconds and launches
(almost) nothing: the host building a batch on the CPU, a `DataLoader`'s `__next__`, I/O, a sleep,
checkpointing. The rule names the region, how long each call takes and what it launches, and the
host ops with the most self time in that idle.

Why:
The GPU can only be as busy as the host keeps it. The short gaps between the launches of a loop of
ops are per-op overhead (`overhead-bound`, `launch-bound`, `many-calls` share them out); here the
host stops feeding the GPU altogether to do something else, and no amount of fusing or CUDA graphs
recovers that time: the work has to move off the GPU's path (workers, prefetching, the GPU).

Example:
gpu/gpu_idle_dataloader on an H200: each step builds a batch on the CPU (`aten::randn`,
normalisation, a 4 ms sleep) inside `data_loading`, then runs a bf16 MLP forward (0.75 ms of GPU
time per step). `data_loading` lasts 13.0-14.7 ms per step with one launch (its H2D copy); the GPU
is idle under it 13.4 ms per step, 87% of the 15.4 ms median step (critical, and the top fix).

Impact:
Per step: the GPU idle (no kernel, copy or memset on the busiest device) inside the steps under
those regions, by interval arithmetic on the trace, so each ns is counted once: the idle after a
sync until the next device work is the sync's (host-sync, trailing-sync, pageable-memcpy: 0.8 ms
per step of gpu_idle_dataloader's, after its pageable copy's stream sync), and the idle between
the launches of ops is per-op overhead, never this rule's. What moving the work off the GPU's path
would save at most (upper bound: a loader in workers still costs the copy). The other specific
causes of idle are other rules' findings and are left to them, so the same idle is never reported
twice: torch.compile compiling (recompilation: gpu/recompile's 292 ms per step), one-time set-up in
a first call (cold-start, dead-window, lazy-loading: seed_mm64_cold's first `matmul_add`, 137.8 ms)
and the profiler's buffer requests (profiler-overhead). The GPU-idle ledger (`_idle`) marks all of them,
and overhead-bound leaves them out too. Before, the rule reported every gap of 1 ms or more as one
warning without an impact, whatever filled it, restating those rules.

Fix:
Take the work off the GPU's critical path: `DataLoader(num_workers>0, pin_memory=True)` with
prefetching, so batch N+1 is ready while the GPU runs batch N; copy with `non_blocking=True` from
pinned memory; build the data on the GPU; move checkpointing and logging out of the step or to a
thread.
"""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Evidence, Finding, Record
from pista.rules._common import evidence as event_evidence
from pista.rules._common import kernel_launches, step_at, us
from pista.rules._idle import ledger, spans, subtract, sum_under
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals

ID = "gpu-idle"
# A symptom: the engine credits it with what is left once every cause's fix is replayed (pista.engine).
SYMPTOM = True
# Below this share of the step the idle is noise (REVIEW.md: under ~1% is worth nothing).
MIN_SHARE = 0.01
EVIDENCE_GAPS = 3
TOP_OPS = 3
TOP_REGIONS = 3
CHUNK = 1 << 18  # ops _ops_inside measures at a time (memory, not output)
# The idle in no recorded op is named where it is this share of the claimed idle (gpu/gpu_idle_dataloader:
# its time.sleep, ~4.7 of 13.8 ms a step; below a tenth it is the gaps between ops).
NO_OP_SHARE = 0.1


class Region(Record):
    """A region that launches (almost) nothing, and the GPU idle under its calls."""

    name: str
    calls: int  # calls with idle under them
    host_us_per_call: float  # their mean wall time
    launches_per_call: float  # kernel, copy and memset launches under each
    idle_us_per_step: float


class GpuIdle(Record):
    steps: int
    has_steps: bool
    step_us: float  # the median step (the window without steps)
    idle_us_per_step: float  # all GPU idle in the steps
    claimed_us_per_step: float  # under the regions (the impact)
    regions: tuple[Region, ...]  # most idle first
    ops_self_us: tuple[tuple[str, float], ...]  # host ops with the most self time in that idle, per step
    # of that idle, per step, the time no recorded op or runtime call covers: Python, I/O or sleeping
    # (gpu/gpu_idle_dataloader: its 4 ms time.sleep a step, which no op names)
    no_op_us_per_step: float
    longest_gap_us: float

    @property
    def names_no_op(self) -> bool:
        """The idle in no recorded op is worth naming (NO_OP_SHARE of the claim)."""
        return self.no_op_us_per_step >= NO_OP_SHARE * self.claimed_us_per_step


class IdleGap(Record):
    """Note on a stretch of GPU idle under a region."""

    idle_us: float


class UnderRegion(Record):
    """Note on the call of a region the GPU idled under."""

    launches: int
    idle_us: float


class SelfTime(Record):
    """Note on a host op with self time inside the idle."""

    self_us: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    book = ledger(facts)
    if book is None:
        return []
    claim = book.claims["data"]
    impact = ctx.per_step(claim.total)
    if impact.share < MIN_SHARE:
        return []
    n = ctx.step_count
    trace = facts.trace
    src = np.unique(book.sources["data"])
    launches = sum_under(facts, kernel_launches(facts), src)  # aligned with src
    idle = claim.covered(trace.ts[src], trace.ts[src] + trace.dur[src])
    regions = []
    for name_id in np.unique(trace.name[src]).tolist():
        mine = (trace.name[src] == name_id) & (idle > 0)
        if mine.any():
            calls = src[mine]
            regions.append(Region(trace.names[name_id], int(calls.size), us(trace.dur[calls].mean()),
                                  float(launches[mine].mean()), us(idle[mine].sum()) / n))
    regions.sort(key=lambda r: -r.idle_us_per_step)
    longest = np.argsort(claim.start - claim.end, kind="stable")
    ops = _ops_inside(facts, claim)
    record = GpuIdle(steps=n, has_steps=bool(facts.steps), step_us=us(ctx.step_ns),
                     idle_us_per_step=us(book.idle.total) / n, claimed_us_per_step=impact.us,
                     regions=tuple(regions[:TOP_REGIONS]),
                     ops_self_us=tuple((trace.names[k], us(v) / n) for k, (v, _) in ops[:TOP_OPS]),
                     no_op_us_per_step=us(_outside_ops(facts, claim).total) / n,
                     longest_gap_us=us(claim.end[longest[0]] - claim.start[longest[0]]))
    lane = f"GPU {book.device}"
    evidence = [Evidence.span("GPU idle", lane, int(claim.start[k]), int(claim.end[k]), step_at(facts, int(claim.start[k])),
                              IdleGap(us(claim.end[k] - claim.start[k]))) for k in sorted(longest[:EVIDENCE_GAPS])]
    for r in regions[:2]:
        at = np.flatnonzero(trace.name[src] == trace.names.index(r.name))
        calls = src[at]
        k = int(at[np.argmax(claim.covered(trace.ts[calls], trace.ts[calls] + trace.dur[calls]))])
        best = int(src[k])
        evidence.append(event_evidence(facts, best, UnderRegion(int(launches[k]), us(
            claim.covered(trace.ts[[best]], trace.ts[[best]] + trace.dur[[best]])[0]))))
    for _, (v, i) in ops[:TOP_OPS]:
        if all(e.name != trace.event_name(i) for e in evidence):
            evidence.append(event_evidence(facts, i, SelfTime(us(v) / n)))
    # named regions doing host work (NumPy preprocessing, a loader, I/O) are a cause the user can move; idle
    # under no region is a symptom of what runs there
    return [Finding(ID, record, impact, evidence, edit=Edit("work off the GPU's path", host_scale_spans=((claim, 0.0),)),
                    symptom=False if regions else None)]


def _outside_ops(facts: Facts, claimed: Intervals) -> Intervals:
    """The part of the claimed idle that no host op or runtime call spans (regions do not count)."""
    trace = facts.trace
    host = np.flatnonzero((facts.is_host | facts.is_overhead) & ~trace.category_mask({"user_annotation"}))
    return subtract(claimed, spans(facts, host))


def _ops_inside(facts: Facts, claimed: Intervals) -> list[tuple[int, tuple[float, int]]]:
    """Per host event name (ops and runtime calls, not regions): self time falling inside the claimed
    idle (self time spread evenly over the event), and its event with most."""
    trace = facts.trace
    host = (facts.is_host | facts.is_overhead) & ~trace.category_mask({"user_annotation"})
    idx = np.flatnonzero(host & (facts.self_time > 0))
    if idx.size == 0 or claimed.start.size == 0:
        return []
    totals: dict[int, list] = {}
    for lo in range(0, idx.size, CHUNK):  # a few arrays the size of a chunk, not of the host events
        part = idx[lo:lo + CHUNK]
        start, dur = trace.ts[part], trace.dur[part]
        inside = claimed.covered(start, start + dur) * (facts.self_time[part] / np.maximum(dur, 1))
        for k, v in zip(part[inside > 0].tolist(), inside[inside > 0].tolist(), strict=True):
            entry = totals.setdefault(int(trace.name[k]), [0.0, k, -1.0])
            entry[0] += v
            if v > entry[2]:
                entry[1], entry[2] = k, v
    return sorted(((key, (v[0], v[1])) for key, v in totals.items()), key=lambda kv: -kv[1][0])
