"""The host-sync rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
host-sync`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/host_sync.ftl."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import numpy as np

from pista.findings import Context, Evidence, Finding, Record
from pista.query import COMPILE_EVENT, DTOH_COPY, SYNC_NAMES, name_mask, nearest_ancestor, pattern_mask
from pista.rules import _one_time as one_time
from pista.rules._anomaly import check_ops
from pista.rules._breaks import gaps
from pista.rules._common import (
    backward_nodes,
    busy_ns,
    kernel_launches,
    memcpys,
    outer_ops,
    outermost_aten,
    profiler_stop_sync,
    us,
)
from pista.rules._cudnn import inside, slow_calls
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, merge_intervals

ID = "host-sync"
# At least this many syncing ops per step on average: gpu/host_sync_item has 8, the pageable
# copies of gpu/pageable_memcpy 1 (.cpu()); the other fixtures have none inside an op. Below the
# warning share a sync is still reported, at info, as a latent cost: on GPT n=2 one .item() per
# step cost little while the host was the bottleneck and +20% once it was fast (REVIEW.md).
MIN_SYNCS_PER_STEP = 1.0
EVIDENCE_EVENTS = 9
PAGEABLE = re.compile(r"Pageable")  # a copy to or from pageable memory blocks by itself: pageable-memcpy's


class SyncingOp(Record):
    """One op name that synced: how often, through which calls, and what it cost over the window."""

    name: str
    count: int
    chain: tuple[str, ...]  # the op down to the call that blocked (aten::item > ... > cudaStreamSynchronize)
    explicit: bool  # a torch.cuda.synchronize()-style call outside any op (chain: its region > the call)
    per_step: dict[str, int]
    blocked_us: float
    stall_us: float  # blocked plus the GPU idle after, until the next kernel


class HostSync(Record):
    syncs: int
    steps: int
    syncs_per_step: float
    stall_us: float  # over the window
    step_share_percent: float
    ops: tuple[SyncingOp, ...]  # costliest first
    check: str = ""  # where most reads test a value (`assert torch.isfinite(h).all()`): the test's ops, e.g.
    # "aten::isfinite > aten::all"


class SyncedVia(Record):
    """Note on an op call that synced."""

    via: str
    blocked_us: float
    stall_us: float


class Blocked(Record):
    """Note on the runtime call the host blocked in."""

    blocked_us: float
    gpu_busy_us: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    syncs = _sync_calls(facts)
    pageable_ops = _ops_launching(facts, memcpys(facts) & pattern_mask(facts, PAGEABLE))
    # one hit per op call: its syncs and device-to-host copies (a copy to or from pageable memory
    # blocks by itself: pageable-memcpy's finding, with its op's sync)
    anomaly = set(check_ops(facts).tolist())  # the engine's NaN checks: anomaly-mode's reads
    calls: dict[int, list[int]] = defaultdict(list)
    for i in np.flatnonzero(syncs | _read_backs(facts)).tolist():
        op = outermost_aten(facts, i)
        if op >= 0 and op not in pageable_ops and op not in anomaly:
            calls[op].append(i)
    hits = [(op, parts) for op, parts in calls.items() if syncs[parts].any()]
    hits += [(i, [i]) for i in _explicit_syncs(facts, syncs)]
    if not hits or len(hits) / ctx.step_count < MIN_SYNCS_PER_STEP:
        return []
    blocked, stall = _costs(facts, hits)
    total = sum(stall.values())
    impact = ctx.per_step(total)
    ops = _by_op(facts, syncs, hits, blocked, stall)
    # the value tests before the reads (`assert torch.isfinite(h).all()`), found once for the record and the edit
    checks = _checks(facts, [op for op, _ in hits if facts.trace.event_name(op) in READ_OPS])
    record = HostSync(syncs=len(hits), steps=ctx.step_count, syncs_per_step=len(hits) / ctx.step_count,
                      stall_us=us(total), step_share_percent=100.0 * impact.share, ops=ops,
                      check=_check_name(facts, checks, len(hits)))
    return [Finding(ID, record, impact, _evidence(facts, syncs, hits, blocked, stall),
                    edit=_edit(facts, hits, stall, checks))]


# Ops that exist only to bring a value to the host: the fix (keep it on the GPU) removes the op with its copy
# and sync. Any other syncing op (a boolean-mask index, nonzero, a blocking copy) stays and stops waiting.
READ_OPS = frozenset({"aten::item", "aten::_local_scalar_dense", "aten::tolist", "aten::is_nonzero"})
# A value test read on the host (`assert torch.isfinite(h).all()`): the reduction to one bool and the elementwise
# test before it exist only for the read, and go with it (savings/h100/sync_isfinite_check: 16 checks a step
# measured 19.0%; the reads alone replayed to 4.9%).
CHECK_REDUCTIONS = frozenset({"aten::all", "aten::any"})
CHECK_TESTS = frozenset({"aten::isfinite", "aten::isnan", "aten::isinf", "aten::isposinf", "aten::isneginf",
                         "aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge", "aten::isclose",
                         "aten::logical_not", "aten::logical_and", "aten::logical_or"})
# Ops that sync because their output's size depends on the values (a boolean mask): the fix keeps the shape
# static (multiply by the mask, torch.where), so the op goes with its backward, not only its wait
# (savings/h100/sync_bool_mask: logits[mask] gathers and scatters the logits; measured 9.6%, the wait alone
# replays to 3.5%).
MASKED_OPS = frozenset({"aten::index", "aten::masked_select", "aten::nonzero", "aten::masked_scatter"})
# torch.cuda.synchronize()'s Python wrapper goes with the call. Without stacks the wrapper shows only as the
# host gap before the call; at most this much of it is taken: with stacks the wrapper's frames take 24 µs
# around a 3.7 µs cudaDeviceSynchronize (savings/h100/sync_cuda_synchronize), about 12 µs once the stacks'
# cost is out (PROFILER_STACK_DISPATCH_INFLATION); without them the gaps before the calls are 8-17 µs
# (savings/h100/sync_timing_infer, two syncs around each block: 12.7% measured).
SYNC_WRAPPER_GAP_NS = 15_000
# A value read after the same producing op this many times per step (`p.grad.norm().item()` for each
# parameter) is a loop over tensors: the fix reads them batched (torch._foreach_norm, torch.stack, one
# .item()), so the producers' dispatch goes down to this share (savings/h100/sync_per_param: 53 norms a step).
MIN_READS_IN_LOOP = 8
LOOP_PRODUCER_SHARE = 0.8  # the reads that follow the same op, at least
BATCHED_PRODUCER_HOST = 0.1
# A sync whose GPU work during the call is at least this share work launched before the window (a harness's
# torch.cuda.synchronize() at the step's start, draining the kernels of the run before it: tl_h100_qwen05's
# cudaDeviceSynchronize waits 14.1 ms for 500 of them, GPU busy 13.4 ms, all pre-window) waits for work that is
# not the step's: its fix cannot take that wait away, only the GPU idle it caused after it (283 µs; replayed as
# a removed sync, the host ran 14 ms ahead into the step and the saving was 5x that).
PRE_WINDOW_SHARE = 0.5


def _edit(facts: Facts, hits: list[tuple[int, list[int]]], stall: dict[int, int], checks: dict[int, list[int]]) -> Edit:
    """What the fix does: a value read goes (the op, its copy and its sync, and the Python statement that
    called only it), an explicit sync goes with its wrapper, a masked op goes with its backward, any other
    syncing op stops waiting; reads in a loop over tensors batch their producers. A sync that waits for work
    launched before the window keeps its wait: the host's time after it, up to the GPU idle it caused, goes."""
    trace = facts.trace
    hits, cut = _waits_kept(facts, hits, stall)
    gone, masked, unblock = _by_fix(facts, hits)
    work = _WorkIndex(facts)
    remove = [work.statement(op) for op in gone] + masked
    remove += [i for op in gone for i in checks.get(op, ())]  # a value test's ops go with its read
    remove += backward_nodes(facts, np.array(masked, np.int64)).tolist()
    # a bare sync's wrapper the trace recorded no frame for: the host time right before it
    wrappers = work.gaps_before([op for op, parts in hits if parts == [op] and work.statement(op) == op])
    scale = _batched_producers(facts, work, [op for op in gone if trace.event_name(op) in READ_OPS])
    return Edit("the syncs gone", remove=np.array(remove, np.int64), unblock=np.array(unblock, np.int64),
                host_scale=scale, host_scale_spans=((wrappers, 0.0),) if wrappers.start.size else (),
                host_remove_ns=cut)


def _check_name(facts: Facts, checks: dict[int, list[int]], hits: int) -> str:
    """The value test most reads make, where at least half of the `hits` make one ("aten::isfinite > aten::all")."""
    trace = facts.trace
    tests = Counter(" > ".join(trace.event_name(i) for i in reversed(parts)) for parts in checks.values())
    if not tests:
        return ""
    name, count = tests.most_common(1)[0]
    return name if 2 * count >= hits else ""


def _checks(facts: Facts, reads: list[int]) -> dict[int, list[int]]:
    """Per read that tests a value: right before it on its thread, a reduction to one bool (all, any) and before
    that the elementwise test (`assert torch.isfinite(h).all()`, `if torch.isnan(loss).any():`), the reduction
    first."""
    if not reads:
        return {}
    trace = facts.trace
    outer, keys = outer_ops(facts)
    at = {int(i): k for k, i in enumerate(outer.tolist())}
    out: dict[int, list[int]] = {}
    for r in reads:
        k = at.get(int(r), -1)
        if k < 1 or keys[k - 1] != keys[k] or trace.event_name(int(outer[k - 1])) not in CHECK_REDUCTIONS:
            continue
        out[r] = [int(outer[k - 1])]
        if k >= 2 and keys[k - 2] == keys[k] and trace.event_name(int(outer[k - 2])) in CHECK_TESTS:
            out[r].append(int(outer[k - 2]))
    return out


def _by_fix(facts: Facts, hits: list[tuple[int, list[int]]]) -> tuple[list[int], list[int], list[int]]:
    """The hits by what their fix does: a value read or a bare sync goes (gone); a masked op goes with its
    backward (masked); any other syncing op stays and stops waiting (its parts, unblocked)."""
    gone: list[int] = []
    masked: list[int] = []
    unblock: list[int] = []
    for op, parts in hits:
        name = facts.trace.event_name(op)
        if parts == [op] or name in READ_OPS:
            gone.append(op)
        elif name in MASKED_OPS:
            masked.append(op)
        else:
            unblock.extend(parts)
    return gone, masked, unblock


def _waits_kept(facts: Facts, hits: list[tuple[int, list[int]]],
                stall: dict[int, int]) -> tuple[list[tuple[int, list[int]]], tuple[np.ndarray, np.ndarray] | None]:
    """The hits the fix takes away, and for those that wait for work launched before the window, the host time
    it takes out right after each (the GPU idle it caused): (instants, ns)."""
    trace = facts.trace
    early = _pre_window(facts, hits)
    if not early:
        return hits, None
    cut = (np.array([int(trace.ts[op] + trace.dur[op]) for op in early], np.int64),
           np.array([stall[op] for op in early], np.int64))
    return [(op, parts) for op, parts in hits if op not in early], cut


def _pre_window(facts: Facts, hits: list[tuple[int, list[int]]]) -> set[int]:
    """The hits whose GPU work during their calls is PRE_WINDOW_SHARE or more work launched before the window
    (no launch recorded, or one before the first step)."""
    trace = facts.trace
    lo = facts.steps[0].start if facts.steps else facts.window[0]
    work = np.flatnonzero(facts.is_device_work)
    launch = facts.launcher[work]
    work = work[(launch < 0) | (trace.ts[np.maximum(launch, 0)] < lo)]
    early = merge_intervals(trace.ts[work], trace.ts[work] + trace.dur[work])
    out = set()
    for op, parts in hits:
        a, b = int(trace.ts[parts].min()), int((trace.ts[parts] + trace.dur[parts]).max())
        busy = busy_ns(facts, a, b)
        if busy > 0 and early.clip(a, b).total >= PRE_WINDOW_SHARE * busy:
            out.add(op)
    return out


class _WorkIndex:
    """Per host thread, the calls that do work (ops, runtime and driver calls) in time order: what a Python
    frame holds besides a given call, and what ran just before it."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        trace = facts.trace
        work = np.flatnonzero(facts.is_host & trace.category_mask({"cpu_op", "cuda_runtime", "cuda_driver"}))
        self.frame = trace.category_id("python_function")
        self.lanes: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        keys = trace.pid[work].astype(np.int64) * (1 << 32) + trace.tid[work].astype(np.int64)
        for key in np.unique(keys).tolist():
            idx = work[keys == key]
            idx = idx[np.argsort(trace.ts[idx], kind="stable")]
            end = trace.ts[idx] + trace.dur[idx]
            self.lanes[(key >> 32, key & 0xFFFFFFFF)] = (idx, trace.ts[idx], np.maximum.accumulate(end))

    def _lane(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        trace = self.facts.trace
        empty = np.empty(0, np.int64)
        return self.lanes.get((int(trace.pid[i]), int(trace.tid[i]) & 0xFFFFFFFF), (empty, empty, empty))

    def count(self, i: int) -> int:
        """The work calls inside event i's span on its thread."""
        trace = self.facts.trace
        _, ts, _ = self._lane(i)
        return int(np.searchsorted(ts, trace.ts[i] + trace.dur[i], side="right") - np.searchsorted(ts, trace.ts[i]))

    def statement(self, i: int) -> int:
        """The outermost Python frame above event i that calls nothing else (torch.cuda.synchronize()'s
        wrapper, `x.item()`), or i where the trace has no frames."""
        own, j, top = self.count(i), int(self.facts.parent[i]), i
        while j >= 0 and int(self.facts.trace.cat[j]) == self.frame and self.count(j) == own:
            top, j = j, int(self.facts.parent[j])
        return top

    def previous(self, i: int) -> int:
        """The work call on i's thread that ran last before i, or -1."""
        idx, ts, _ = self._lane(i)
        k = int(np.searchsorted(ts, self.facts.trace.ts[i])) - 1
        return int(idx[k]) if k >= 0 else -1

    def gaps_before(self, calls: list[int]) -> Intervals:
        """The host time right before each call since the thread's last work ended, at most
        SYNC_WRAPPER_GAP_NS: a wrapper the trace recorded no frame for."""
        trace = self.facts.trace
        lo, hi = [], []
        for i in calls:
            _, ts, ends = self._lane(i)
            k = int(np.searchsorted(ts, trace.ts[i])) - 1
            if k >= 0 and ends[k] < trace.ts[i]:
                lo.append(max(int(ends[k]), int(trace.ts[i]) - SYNC_WRAPPER_GAP_NS))
                hi.append(int(trace.ts[i]))
        return merge_intervals(np.array(lo, np.int64), np.array(hi, np.int64))


def _batched_producers(facts: Facts, work: _WorkIndex, reads: list[int]) -> tuple[tuple[np.ndarray, float], ...]:
    """Reads in a loop over tensors: the ops right before them, when one op name precedes most of them and
    they repeat at least MIN_READS_IN_LOOP times a step; their dispatch shrinks to a batched call's."""
    if len(reads) < MIN_READS_IN_LOOP * max(1, len(facts.steps)):
        return ()
    trace = facts.trace
    before = [outermost_aten(facts, p) if outermost_aten(facts, p) >= 0 else p
              for p in (work.previous(work.statement(r)) for r in reads) if p >= 0]
    names = Counter(trace.event_name(p) for p in before)
    if not names:
        return ()
    name, n = names.most_common(1)[0]
    if n < LOOP_PRODUCER_SHARE * len(reads) or name in READ_OPS:
        return ()
    producers = np.unique(np.array([p for p in before if trace.event_name(p) == name], np.int64))
    return ((producers, BATCHED_PRODUCER_HOST),)


def _sync_calls(facts: Facts) -> np.ndarray:
    """Sync runtime calls inside the steps, not while compiling (recompilation's) nor under cuDNN
    setting up a new shape (cudnn-setup's: cudnn.benchmark times its candidates with syncs)."""
    syncs = facts.is_host & name_mask(facts, SYNC_NAMES) & ~_compiling(facts)
    if facts.steps:
        syncs &= facts.event_step >= 0
    setup = slow_calls(facts)[0]
    if setup.size:
        idx = np.flatnonzero(syncs)
        syncs[idx[inside(facts, setup, idx) >= 0]] = False
    _drop_between_graphs(facts, syncs)
    return syncs


def _drop_between_graphs(facts: Facts, calls: np.ndarray) -> None:
    """Unmark the calls between the graphs of a compiled call Dynamo broke: a value read there is
    graph-break's."""
    idx = np.flatnonzero(calls)
    calls[idx[one_time.covered(gaps(facts), facts.trace.ts[idx])]] = False


def _explicit_syncs(facts: Facts, syncs: np.ndarray) -> list[int]:
    """torch.cuda.synchronize() and the like, outside any op, with GPU work still outstanding when
    called, or with launches after it in its step: a sync between layers drains the queue the host would
    otherwise keep ahead of the GPU, which costs once the host is fast even where the profiled GPU had
    finished (savings/h100/sync_cuda_synchronize: 12 a step, the GPU idle at each as profiled, 12.9% measured
    unprofiled). An idle one after the step's last launch is trailing-sync's; the profiler's stop sync is
    nobody's."""
    trace = facts.trace
    outside = syncs & (nearest_ancestor(facts, trace.category_mask({"cpu_op"}), inclusive=False) < 0)
    stop = profiler_stop_sync(facts)
    launches = np.sort(trace.ts[kernel_launches(facts)])
    out = []
    for i in np.flatnonzero(outside).tolist():
        start, end = int(trace.ts[i]), int(trace.ts[i] + trace.dur[i])
        step_end = facts.steps[int(facts.event_step[i])].end if facts.steps and facts.event_step[i] >= 0 else end
        later = np.searchsorted(launches, end) < np.searchsorted(launches, step_end)
        if i != stop and (busy_ns(facts, start, end) > 0 or later):
            out.append(i)
    return out


def _compiling(facts: Facts) -> np.ndarray:
    return nearest_ancestor(facts, facts.is_host & pattern_mask(facts, COMPILE_EVENT)) >= 0


def _read_backs(facts: Facts) -> np.ndarray:
    """Launch calls of device-to-host copies inside the steps, not while compiling."""
    dtoh = memcpys(facts) & pattern_mask(facts, DTOH_COPY)
    calls = np.zeros(len(facts.trace), dtype=bool)
    calls[facts.launcher[dtoh & (facts.launcher >= 0)]] = True
    calls &= ~_compiling(facts)
    if facts.steps:
        calls &= facts.event_step >= 0
    _drop_between_graphs(facts, calls)
    return calls


def _costs(facts: Facts, hits: list[tuple[int, list[int]]]) -> tuple[dict[int, int], dict[int, int]]:
    """Per op call: ns the host was blocked, and what the sync cost the GPU: the idle after it until
    the next device work, but no more than the GPU work the host waited for. Without the sync the
    host would have dispatched the next op while that work ran; idle beyond it is the dispatch
    itself, which the sync did not cause (see Impact)."""
    trace = facts.trace
    hi = facts.window[1]
    starts = _busy_starts(facts)
    blocked: dict[int, int] = {}
    stall: dict[int, int] = {}
    for op, parts in hits:
        begin = int(trace.ts[parts].min())
        end = int((trace.ts[parts] + trace.dur[parts]).max())
        stop = facts.steps[int(facts.event_step[op])].end if facts.steps and facts.event_step[op] >= 0 else hi
        pos = np.searchsorted(starts, end)
        until = max(end, min(int(starts[pos]) if pos < starts.size else stop, stop))
        waited = busy_ns(facts, begin, end)
        blocked[op] = int(trace.dur[parts].sum())
        stall[op] = min(waited, (until - end) - busy_ns(facts, end, until))
    return blocked, stall


def _by_op(facts: Facts, syncs: np.ndarray, hits: list[tuple[int, list[int]]], blocked: dict[int, int],
           stall: dict[int, int]) -> tuple[SyncingOp, ...]:
    trace = facts.trace
    by_name: dict[str, list[tuple[int, list[int]]]] = defaultdict(list)
    for op, parts in hits:
        by_name[trace.event_name(op)].append((op, parts))
    out = []
    for name, items in by_name.items():
        counts = Counter(facts.step_of(op) for op, _ in items)
        op0, parts0 = items[0]
        explicit = parts0 == [op0]
        chain = _region_chain(facts, op0) if explicit else _chain(facts, op0, _key_part(trace, syncs, parts0))
        out.append(SyncingOp(
            name=name, count=len(items), chain=tuple(chain), explicit=explicit,
            per_step={str(s): c for s, c in sorted(counts.items(), key=lambda x: (x[0] is None, x[0]))},
            blocked_us=us(sum(blocked[op] for op, _ in items)), stall_us=us(sum(stall[op] for op, _ in items))))
    return tuple(sorted(out, key=lambda o: -o.stall_us))


def _evidence(facts: Facts, syncs: np.ndarray, hits: list[tuple[int, list[int]]], blocked: dict[int, int],
              stall: dict[int, int]) -> list[Evidence]:
    """The costliest op calls, each with the calls it blocked in."""
    trace = facts.trace
    out = []
    picks = sorted(hits, key=lambda h: -stall[h[0]])[: max(1, EVIDENCE_EVENTS // 3)]
    for op, parts in sorted(picks, key=lambda h: int(trace.ts[h[0]])):
        if parts == [op]:  # an explicit sync: the call is the op
            gpu = busy_ns(facts, int(trace.ts[op]), int(trace.ts[op] + trace.dur[op]))
            out.append(Evidence.of(facts, op, Blocked(us(trace.dur[op]), us(gpu))))
            continue
        via = trace.event_name(_key_part(trace, syncs, parts))
        out.append(Evidence.of(facts, op, SyncedVia(via, us(blocked[op]), us(stall[op]))))
        for j in sorted(parts, key=lambda j: int(trace.ts[j])):
            gpu = busy_ns(facts, int(trace.ts[j]), int(trace.ts[j] + trace.dur[j]))
            out.append(Evidence.of(facts, j, Blocked(us(trace.dur[j]), us(gpu))))
    return out



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


def _region_chain(facts: Facts, i: int) -> list[str]:
    """The nearest record_function region above an explicit sync, then the sync."""
    trace = facts.trace
    region = trace.category_id("user_annotation")
    j = int(facts.parent[i])
    while j >= 0 and (int(trace.cat[j]) != region or trace.event_name(j).startswith("ProfilerStep#")):
        j = int(facts.parent[j])
    return ([trace.event_name(j)] if j >= 0 else []) + [trace.event_name(i)]


def _ops_launching(facts: Facts, work: np.ndarray) -> set[int]:
    """The outermost aten ops whose runtime calls launched the given device work."""
    out = set()
    for w in np.flatnonzero(work & (facts.launcher >= 0)).tolist():
        op = outermost_aten(facts, int(facts.launcher[w]))
        if op >= 0:
            out.add(op)
    return out


def _busy_starts(facts: Facts) -> np.ndarray:
    starts = [iv.start for iv in facts.gpu_busy.values()]
    return np.sort(np.concatenate(starts)) if starts else np.empty(0, np.int64)
