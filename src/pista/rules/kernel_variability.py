"""The kernel-variability rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
kernel-variability`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/kernel_variability.ftl."""

from __future__ import annotations

import itertools

import msgspec
import numpy as np

from pista.distributed.comm import COMM_KERNEL
from pista.findings import Context, Finding, Record
from pista.opargs import text_ids
from pista.query import pattern_mask
from pista.rules._common import evidence, us
from pista.trace.facts import Facts

ID = "kernel-variability"

# Launches with the same name and grid/block, at least this many to speak of a distribution.
KV_MIN_CALLS = 3
# Short kernels jitter by a few hundred ns (launch and timer granularity): big_gpt_eager_20steps'
# 2 µs copy kernel has max/median 1.29 from that alone. Below 5 µs the ratios say nothing.
KV_MIN_MEDIAN_US = 5.0
# p95/median. Across all the steady fixtures (14560 kernels in big_gpt_eager_20steps, series_*,
# seed_*) no group of median >= 5 µs exceeds 1.22 (a 5.9 µs CUB radix sort); the contended kernel
# in kernel_variability reaches 1.59.
KV_P95_RATIO = 1.4
# ...or a single outlier: max/median. The steady fixtures stay at or under 1.25 for median >= 5 µs.
KV_MAX_RATIO = 2.0
# The time the slow calls cost over the median, at least this share of the group's total:
# kernel_variability's group loses 17%; keeps rare, tiny excursions out.
KV_MIN_EXCESS_SHARE = 0.02
# ... and at least this share of the step (REVIEW.md: under ~1% of the step is noise):
# kernel_variability's mul 9.9%.
KV_MIN_STEP_SHARE = 0.01
KV_MAX_FINDINGS = 3  # the groups with the most excess time; one finding each
KV_MAX_SAMPLES = 2000  # durations kept in the record for the report's plot
EVIDENCE_SLOW = 3  # slowest calls shown, plus one typical call; presentation


class KernelVariability(Record):
    name: str
    launch_config: str  # "grid [32768,1,1] block [128,1,1]" ('' where the trace has none)
    input_dims: str  # the launching op's Input Dims, as recorded
    launch: int  # which launch of this kernel within its op call (0: the first)
    calls: int
    min_us: float
    median_us: float
    mean_us: float
    p95_us: float
    max_us: float
    p95_over_median: float
    max_over_median: float
    excess_us: float  # over the window: the calls' time above the median
    steps: int
    step_share_percent: float
    step_median_us: dict[int, float]  # per step number, the calls' median
    slow_steps: tuple[int, ...]  # steps whose median is KV_P95_RATIO above the median of medians
    durations_us: tuple[float, ...]  # the first KV_MAX_SAMPLES calls, for the report's plot


class SlowCall(Record):
    """Note on one of the slowest calls."""

    over_median: float


class TypicalCall(Record):
    """Note on the call nearest the median."""

    median_us: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    # a collective's time is its wait for the other ranks: their skew, not this kernel's variability
    kernels = np.flatnonzero(facts.is_device_work & trace.category_mask({"kernel"}) & ~pattern_mask(facts, COMM_KERNEL))
    kernels = kernels[_could_vary(trace.dur[kernels], trace.name[kernels])]
    if kernels.size < KV_MIN_CALLS:
        return []
    kernels, config, config_text, inputs, shown, launch = _launch_keys(facts, kernels)
    # same name, same grid/block, same inputs of the launching op, same launch within it: the same work
    inverse = _group_ids(trace.name[kernels], config, inputs, launch)
    counts = np.bincount(inverse)
    by_group = np.argsort(inverse, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(counts)))
    found = []
    for g in np.flatnonzero(counts >= KV_MIN_CALLS).tolist():
        rows = _steady(trace, kernels, by_group[bounds[g]:bounds[g + 1]])
        if rows.size < KV_MIN_CALLS:
            continue
        members = kernels[rows]
        dur = trace.dur[members].astype(np.float64)
        median = float(np.median(dur))
        if median < KV_MIN_MEDIAN_US * 1000.0:
            continue
        p95, top = float(np.percentile(dur, 95)), float(dur.max())
        excess = float(np.clip(dur - median, 0, None).sum())
        if (p95 / median < KV_P95_RATIO and top / median < KV_MAX_RATIO) or excess < KV_MIN_EXCESS_SHARE * dur.sum():
            continue
        if ctx.per_step(excess).share < KV_MIN_STEP_SHARE:
            continue
        first = rows[0]
        found.append((excess, members, dur, median, p95, top, config_text[config[first]],
                      shown[inputs[first]], int(launch[first])))
    found.sort(key=lambda f: -f[0])
    return [_finding(ctx, *f) for f in found[:KV_MAX_FINDINGS]]


def _steady(trace, kernels: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """A group's rows less its first call in the window where that call is the slowest, KV_MAX_RATIO times the
    median of the others or more: a one-time set-up, not the steady calls' spread."""
    if rows.size < KV_MIN_CALLS:
        return rows
    dur = trace.dur[kernels[rows]]
    first = int(np.argmin(trace.ts[kernels[rows]]))
    rest = np.delete(rows, first)
    if dur[first] < dur.max() or dur[first] < KV_MAX_RATIO * float(np.median(trace.dur[kernels[rest]])):
        return rows
    return rest


def _could_vary(dur: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Mask of the calls whose group (any integer key per call) could hold a group that fires, before
    any args are read: a subgroup's max/median is at most the group's max/min, and its median at most
    the group's max."""
    if dur.size == 0:
        return np.zeros(0, dtype=bool)
    _, inverse, counts = np.unique(group, return_inverse=True, return_counts=True)
    longest = np.zeros(counts.size, dtype=np.int64)
    shortest = np.full(counts.size, np.iinfo(np.int64).max, dtype=np.int64)
    np.maximum.at(longest, inverse, dur)
    np.minimum.at(shortest, inverse, dur)
    possible = ((counts >= KV_MIN_CALLS) & (longest >= KV_MIN_MEDIAN_US * 1000.0)
                & (longest >= min(KV_P95_RATIO, KV_MAX_RATIO) * shortest))
    return possible[inverse]


def _group_ids(*columns: np.ndarray) -> np.ndarray:
    """Per row, the id of its tuple of integer keys: ids numbered in order of first appearance."""
    order = np.lexsort(columns[::-1])  # stable: each run of equal keys starts at its first row
    starts = np.zeros(order.size, dtype=bool)
    starts[:1] = True
    for column in columns:
        ordered = column[order]
        starts[1:] |= ordered[1:] != ordered[:-1]
    run = np.cumsum(starts) - 1
    rank = np.empty(run[-1] + 1 if run.size else 0, dtype=np.intp)
    rank[np.argsort(order[starts], kind="stable")] = np.arange(rank.size, dtype=np.intp)
    ids = np.empty(order.size, dtype=np.intp)
    ids[order] = rank[run]
    return ids


def _finding(ctx: Context, excess: float, members: np.ndarray, dur: np.ndarray, median: float, p95: float,
             top: float, config: str, dims: str, launch: int) -> Finding:
    facts = ctx.facts
    trace = facts.trace
    order = np.argsort(trace.ts[members], kind="stable")
    members, dur = members[order], dur[order]
    step_ids = facts.event_step[members]
    per_step = {}
    for s in np.unique(step_ids[step_ids >= 0]).tolist():
        per_step[facts.steps[s].number] = float(np.median(dur[step_ids == s])) / 1000.0
    slow_steps: tuple[int, ...] = ()
    if len(per_step) >= 2:
        mid = float(np.median(list(per_step.values())))
        slow_steps = tuple(s for s, m in per_step.items() if m >= KV_P95_RATIO * mid)
    impact = ctx.per_step(excess)
    record = KernelVariability(
        name=trace.event_name(int(members[0])), launch_config=config, input_dims=dims, launch=launch,
        calls=int(members.size), min_us=us(dur.min()), median_us=us(median), mean_us=us(dur.mean()),
        p95_us=us(p95), max_us=us(top), p95_over_median=p95 / median, max_over_median=top / median,
        excess_us=us(excess), steps=ctx.step_count, step_share_percent=100.0 * impact.share,
        step_median_us=per_step, slow_steps=slow_steps,
        durations_us=tuple(round(float(x), 3) for x in dur[:KV_MAX_SAMPLES] / 1000.0))
    slow = np.argsort(-dur, kind="stable")[:EVIDENCE_SLOW]
    typical = int(np.argmin(np.abs(dur - median)))
    ev = [evidence(facts, int(members[k]), SlowCall(float(dur[k] / median))) for k in slow]
    ev.append(evidence(facts, int(members[typical]), TypicalCall(us(median))))
    return Finding(ID, record, impact, ev)


def _launch_keys(facts: Facts, kernels: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray,
                                                              list[str], np.ndarray]:
    """Of the kernels, those with recorded inputs (calls with none cannot be shown to do the same
    work) whose group could vary, and their keys: grid/block id and texts, inputs id and the 'Input
    Dims' texts, launch number within the op call (see the three helpers)."""
    launch = _launch_numbers(facts, kernels)
    inputs, shown = _recorded_inputs(facts, kernels)
    known = inputs >= 0
    # grid/block only split these groups further: one that cannot vary now cannot after, so the
    # launch args are read for the calls of the groups that could
    known[known] = _could_vary(facts.trace.dur[kernels[known]],
                               _group_ids(facts.trace.name[kernels[known]], inputs[known], launch[known]))
    kernels, inputs, launch = kernels[known], inputs[known], launch[known]
    config, config_text = _launch_configs(facts, kernels)
    return kernels, config, config_text, inputs, shown, launch


def _launch_numbers(facts: Facts, kernels: np.ndarray) -> np.ndarray:
    """For the kernels (event indices): which launch of that kernel name within its op call each
    one is (a cuDNN helper runs once per tensor); 0 outside any op."""
    trace = facts.trace
    owners = facts.owner[kernels]
    names = trace.name[kernels]
    order = np.lexsort((trace.ts[kernels], names, owners))
    same = np.zeros(order.size, dtype=bool)
    same[1:] = (owners[order][1:] == owners[order][:-1]) & (names[order][1:] == names[order][:-1])
    run_start = np.maximum.accumulate(np.where(~same, np.arange(order.size), 0))
    launch = np.zeros(kernels.size, dtype=np.intp)
    launch[order] = np.arange(order.size) - run_start
    launch[owners < 0] = 0
    return launch


def _recorded_inputs(facts: Facts, kernels: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Per kernel, an id for its launching op's recorded inputs in full (dims, types, concrete values;
    -1 where the kernel has no op or the op no record), ids in the order their ops come, and per id
    that op's 'Input Dims' as text. Compared by the store's text ids: no object per op (an OpArgs
    for each of a 1 GB trace's 275 k launching ops held ~45 MiB)."""
    owners = facts.owner[kernels]
    unique_owners = np.unique(owners[owners >= 0])
    fields, texts = text_ids(facts, unique_owners)
    no_record = np.array([t == b"null" for t in texts] + [True])  # absent reads as null; the last: NO_ARGS
    recorded = np.flatnonzero(~no_record[fields[:, 0]])
    keys, first, group = np.unique(fields[recorded], axis=0, return_index=True, return_inverse=True)
    in_order = np.argsort(first, kind="stable")  # the records by their first op
    rank = np.empty(first.size, dtype=np.intp)
    rank[in_order] = np.arange(first.size)
    code = np.full(unique_owners.size + 1, -1, dtype=np.intp)  # the last: the kernels without an op
    code[recorded] = rank[group.reshape(-1)]
    at = np.where(owners >= 0, np.searchsorted(unique_owners, owners), unique_owners.size)
    shown = [_raw_text(texts[dims]) for dims in keys[in_order, 0].tolist()]
    return code[at], shown


def _launch_configs(facts: Facts, kernels: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Per kernel, an id for its 'grid x block' text from its args, and the texts ('' where the
    trace has none). Persistent GEMM kernels launch one CTA per SM whatever the problem size, so
    grid/block alone do not say 'same work'."""
    text_id = {"": 0}
    by_raw = {b"\0": 0}  # grid and block joined by NUL (see _recorded_inputs); neither: no config
    config = []
    for launch in itertools.chain.from_iterable(args for _, args in facts.trace.args_chunks(kernels, _LaunchArgs)):
        key = b"\0" if launch is None else b"\0".join((launch.grid, launch.block))
        if key not in by_raw:  # a few distinct configs: format each once
            grid, _, block = key.partition(b"\0")
            by_raw[key] = text_id.setdefault(f"grid {_raw_dims(grid)} block {_raw_dims(block)}", len(text_id))
        config.append(by_raw[key])
    return np.array(config, dtype=np.intp), list(text_id)


# Typed decodes (trace.decode_args) read only these fields, kept as raw JSON text (joined into
# hashable keys, and already the text shown): a generic args() decode of every kernel dominated
# this rule's time.
_MISSING = msgspec.Raw(b"")


class _LaunchArgs(msgspec.Struct, gc=False):
    grid: msgspec.Raw = _MISSING
    block: msgspec.Raw = _MISSING


def _raw_text(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    return "" if text in ("", "[]", "null") else text


def _raw_dims(raw: bytes) -> str:
    if not raw:
        return "None"
    try:
        return _dims(msgspec.json.decode(raw))
    except msgspec.DecodeError:
        return raw.decode("utf-8", "replace")


def _dims(value: object) -> str:
    if isinstance(value, list):
        return "[" + ",".join(str(v) for v in value) + "]"
    return str(value)
