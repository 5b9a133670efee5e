"""What:
Ops inside the steps that make the host wait for the GPU: `.item()`, `.cpu()`, `.tolist()`,
printing or branching on a CUDA tensor. In the trace they are a cudaStreamSynchronize (or
cudaDeviceSynchronize) under an aten op such as aten::item > aten::_local_scalar_dense or
aten::to > aten::_to_copy > aten::copy_ with a DtoH copy. The rule names the op that synced,
counts it per step and adds up what it cost: the time blocked in the sync plus the GPU idle
that follows, while the host issues the next launches into an empty queue.

Why:
CUDA work is asynchronous: the host normally runs ahead and keeps the GPU's queue full. A sync
drains the queue; after it, the GPU waits for every launch of the next op's dispatch. One
`.item()` per step in a logging line is cheap; one per layer or per micro-step serialises the
whole step.

Example:
gpu/host_sync_item on an H200, 8x (1024² bf16 matmul, then `.float().mean().item()`) per step:
24 aten::item calls over 3 steps (8 per step), each aten::item > aten::_local_scalar_dense with a
DtoH cudaMemcpyAsync and a ~6.3 µs cudaStreamSynchronize: the host is blocked 265 µs in all, and
the GPU then idles another 801 µs before the next launches reach it, 36% of the step time.

Fix:
Keep values on the GPU (accumulate losses in a tensor, `.item()` once every N steps), move
checks out of the hot loop, use `non_blocking=True` copies into pinned memory and read them after
an event, and find hidden syncs with `torch.cuda.set_sync_debug_mode("warn")`.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import numpy as np

from pista.findings import Context, Evidence, Finding, Severity
from pista.rules._common import (
    COMPILE_EVENT,
    SYNC_NAMES,
    busy_ns,
    fmt_ns,
    memcpys,
    name_mask,
    nearest_ancestor,
    pattern_mask,
)
from pista.trace.facts import Facts

ID = "host-sync"
TITLE = "Ops inside the step synchronize the host with the GPU"
SEVERITY = Severity.WARNING
# At least this many syncing ops per step on average: gpu/host_sync_item has 8, the pageable
# copies of gpu/pageable_memcpy 1 (.cpu()); the other fixtures have none inside an op.
MIN_SYNCS_PER_STEP = 1.0
# ... costing at least this share of the step time (sync plus the GPU idle after it):
# gpu/host_sync_item 36%, gpu/pageable_memcpy's 64 MiB .cpu() 84%; a single logging .item() per
# 100 ms step would be well under it.
MIN_STEP_SHARE = 0.05
EVIDENCE_EVENTS = 9
HTOD = re.compile(r"^Memcpy HtoD")
DTOH = re.compile(r"^Memcpy DtoH")
TO_PAGEABLE = re.compile(r"-> Pageable\)")  # a copy into pageable memory blocks the host by itself


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    trace = facts.trace
    cpu_op = trace.category_mask({"cpu_op"})
    syncs = facts.is_host & name_mask(facts, SYNC_NAMES)
    syncs &= nearest_ancestor(facts, cpu_op, inclusive=False) >= 0
    # syncs during compilation / autotuning belong to recompilation
    compiling = nearest_ancestor(facts, facts.is_host & pattern_mask(facts, COMPILE_EVENT)) >= 0
    syncs &= ~compiling
    if facts.steps:
        syncs &= facts.event_step >= 0
    # a blocking host-to-device copy is pageable-memcpy's finding, not a read-back
    htod_ops = _ops_launching(facts, memcpys(facts) & pattern_mask(facts, HTOD))
    dtoh = memcpys(facts) & pattern_mask(facts, DTOH)
    dtoh_calls = np.zeros(len(trace), dtype=bool)
    dtoh_calls[facts.launcher[dtoh & (facts.launcher >= 0)]] = True
    blocking = facts.launcher[dtoh & (facts.launcher >= 0) & pattern_mask(facts, TO_PAGEABLE)]
    dtoh_calls &= ~compiling
    if facts.steps:
        dtoh_calls &= facts.event_step >= 0
    # one hit per op call: its syncs and device-to-host copies, with the host blocked in them
    calls: dict[int, list[int]] = defaultdict(list)
    for i in np.flatnonzero(syncs | dtoh_calls).tolist():
        op = _outermost_op(facts, i)
        if op >= 0 and op not in htod_ops:
            calls[op].append(i)
    hits = [(op, parts) for op, parts in calls.items() if syncs[parts].any() or np.isin(parts, blocking).any()]
    if not hits:
        return []

    lo, hi = facts.window
    n_steps = len(facts.steps) or 1
    starts = _busy_starts(facts)
    blocked: dict[int, int] = {}
    stall: dict[int, int] = {}
    for op, parts in hits:
        end = int((trace.ts[parts] + trace.dur[parts]).max())
        stop = facts.steps[int(facts.event_step[op])].end if facts.steps and facts.event_step[op] >= 0 else hi
        pos = np.searchsorted(starts, end)
        nxt = int(starts[pos]) if pos < starts.size else stop
        blocked[op] = int(trace.dur[parts].sum())
        stall[op] = blocked[op] + max(0, min(nxt, stop) - end)
    total = sum(stall.values())
    step_time = sum(s.dur for s in facts.steps) if facts.steps else hi - lo
    share = total / max(step_time, 1)
    if len(hits) / n_steps < MIN_SYNCS_PER_STEP or share < MIN_STEP_SHARE:
        return []

    by_op: dict[str, list[tuple[int, list[int]]]] = defaultdict(list)
    for op, parts in hits:
        by_op[trace.event_name(op)].append((op, parts))
    ordered = sorted(by_op.items(), key=lambda kv: -sum(stall[op] for op, _ in kv[1]))
    texts, per_op = [], {}
    for name, items in ordered:
        counts = Counter(facts.step_of(op) for op, _ in items)
        block_ns = sum(blocked[op] for op, _ in items)
        cost = sum(stall[op] for op, _ in items)
        per_step = ", ".join(f"step {s}: {c}" for s, c in sorted(counts.items(), key=lambda x: (x[0] is None, x[0])))
        op0, parts0 = items[0]
        chain = " > ".join(_chain(facts, op0, _key_part(trace, syncs, parts0)))
        texts.append(f"{name} {len(items)}x ({per_step}; {chain}): host blocked {fmt_ns(block_ns)}, "
                     f"{fmt_ns(cost - block_ns)} more of GPU idle after")
        per_op[name] = {"count": len(items), "blocked_us": block_ns / 1000.0, "stall_us": cost / 1000.0,
                        "per_step": {str(s): c for s, c in counts.items()}}
    evidence = []
    picks = sorted(hits, key=lambda h: -stall[h[0]])[: max(1, EVIDENCE_EVENTS // 3)]
    for op, parts in sorted(picks, key=lambda h: int(trace.ts[h[0]])):
        key = _key_part(trace, syncs, parts)
        evidence.append(Evidence.of(facts, op, note=(f"synced via {trace.event_name(key)}; host blocked "
                                                      f"{fmt_ns(blocked[op])}, {fmt_ns(stall[op])} with the GPU "
                                                      "idle after")))
        for j in sorted(parts, key=lambda j: int(trace.ts[j])):
            gpu = busy_ns(facts, int(trace.ts[j]), int(trace.ts[j] + trace.dur[j]))
            evidence.append(Evidence.of(facts, j, note=f"host blocked {fmt_ns(trace.dur[j])}, GPU busy {fmt_ns(gpu)}"))
    return [Finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{len(hits)} syncing op calls in {n_steps} step(s): " + "; ".join(texts)
                 + f". Together {fmt_ns(total)}, {100 * share:.1f}% of the step time."),
        advice=("Keep results on the GPU and read them rarely (accumulate, then .item() every N steps); copy "
                "with non_blocking=True into pinned memory; find hidden syncs with "
                "torch.cuda.set_sync_debug_mode('warn')."),
        evidence=evidence,
        metrics={
            "syncs": len(hits),
            "syncs_per_step": len(hits) / n_steps,
            "stall_us": total / 1000.0,
            "step_share_percent": 100.0 * share,
            "ops": per_op,
        },
    )]



def _outermost_op(facts: Facts, i: int) -> int:
    """The aten op the user called: the top of the chain of aten:: ops above event i."""
    trace = facts.trace
    cpu_op = trace.category_id("cpu_op")
    j, top = int(facts.parent[i]), -1
    while j >= 0 and int(trace.cat[j]) == cpu_op and trace.event_name(j).startswith("aten::"):
        top = j
        j = int(facts.parent[j])
    return top


def _key_part(trace, syncs: np.ndarray, parts: list[int]) -> int:
    """The sync call of an op call if it has one, else its longest (blocking) copy."""
    synced = [j for j in parts if syncs[j]]
    return synced[0] if synced else max(parts, key=lambda j: int(trace.dur[j]))


def _chain(facts: Facts, op: int, sync: int) -> list[str]:
    path, j = [], sync
    while j >= 0:
        path.append(facts.trace.event_name(j))
        if j == op:
            break
        j = int(facts.parent[j])
    return path[::-1]


def _ops_launching(facts: Facts, work: np.ndarray) -> set[int]:
    """The outermost aten ops whose runtime calls launched the given device work."""
    out = set()
    for w in np.flatnonzero(work & (facts.launcher >= 0)).tolist():
        op = _outermost_op(facts, int(facts.launcher[w]))
        if op >= 0:
            out.add(op)
    return out


def _busy_starts(facts: Facts) -> np.ndarray:
    starts = [iv.start for iv in facts.gpu_busy.values()]
    return np.sort(np.concatenate(starts)) if starts else np.empty(0, np.int64)
