"""The gemm-heuristics rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
gemm-heuristics`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/gemm_heuristics.ftl."""

from __future__ import annotations

import re

import msgspec
import numpy as np

from pista.findings import Context, Finding, Record
from pista.query import nearest_ancestor
from pista.rules import _one_time as one_time
from pista.rules._common import evidence, kernel_launches, launched_by, step_at, us
from pista.trace.facts import Intervals

ID = "gemm-heuristics"

# A new-shape GEMM call must take this long from its start to its launch: gpu/gemm_new_shapes'
# take 2.6-3.6 ms; GEMMs on known shapes 20-230 µs in every warm fixture (gpu/eval_first_call's
# addmm 50-100 µs, seed_mm4096_warm's mm ~30 µs).
GEMM_HEURISTICS_MIN_US = 500.0
# ...and this many times what the same op takes on shapes it has seen, where it has some.
GEMM_HEURISTICS_RATIO = 5.0
# Shapes must change: at least this many slow calls on different new shapes (gpu/gemm_new_shapes:
# 3). One new shape is a one-off (a last, smaller batch) or a first call, lazy-loading's.
MIN_NEW_SHAPES = 2
# Under 1% of the median step it is noise (REVIEW.md).
MIN_STEP_SHARE = 0.01
EVIDENCE_CALLS = 3  # calls shown (the slowest); presentation


class NewShape(Record):
    """One GEMM call on a shape not seen before."""

    op: str
    dims: str  # its Input Dims, as recorded
    kernel: str
    wait_us: float  # from the op's start to its launch
    step: int | None


class GemmHeuristics(Record):
    calls: int
    shapes: int
    steps: int  # ProfilerSteps the window holds (0 without: the impact is per window)
    in_steps: tuple[int, ...]
    wait_us: float  # from start to launch, all the calls
    typical_us: float | None  # what the same op takes on shapes it has seen
    idle_us: float  # GPU idle in those waits, less the typical: the impact's total
    queries: int  # cudaOccupancy* queries inside the calls
    loads: int  # CUDA kernel loads inside the calls
    new: tuple[NewShape, ...]  # in time order
    once: bool = False  # a first pass over shapes that repeat (one step of several, or repeated after it)


class ShapeNote(Record):
    """Note on a new-shape GEMM call."""

    dims: str
    wait_us: float


class KernelNote(Record):
    """Note on the kernel it launched."""

    dur_us: float


class _Dims(msgspec.Struct):
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=msgspec.Raw(b""))


def check(ctx: Context) -> list[Finding]:
    return one_time.findings(ctx, ID)


def detect(ctx: Context, taken: Intervals) -> tuple[list[Finding], Intervals]:
    facts = ctx.facts
    trace = facts.trace
    chosen = _new_shape_calls(facts, taken)
    if chosen is None:
        return [], one_time.EMPTY
    ops, first_launch, dims, picked, once = chosen
    starts = [int(trace.ts[ops[k]]) for k, _ in picked]
    stops = [int(trace.ts[first_launch[int(ops[k])]]) for k, _ in picked]
    claim = one_time.spans(starts, stops)
    idle = max(0.0, one_time.idle_ns(facts, one_time.minus(claim, taken)) - sum(t or 0.0 for _, t in picked))
    in_steps = tuple(sorted({s for lo in starts if (s := step_at(facts, lo)) is not None}))
    # new shapes in one step of several are a one-time cost (a first pass over the shapes), not a recurring one;
    # so are they, without steps, where every new shape runs again after the last of them (a cold forward)
    once |= len(facts.steps) > 1 and len(in_steps) < 2
    impact = ctx.once(idle) if once else ctx.per_step(idle)
    if impact.share < MIN_STEP_SHARE:
        return [], one_time.EMPTY
    rows = _rows(facts, ops, dims, first_launch, picked, starts, stops)
    record = GemmHeuristics(
        calls=len(picked), shapes=len({dims[k] for k, _ in picked}), steps=len(facts.steps),
        in_steps=in_steps,
        wait_us=us(sum(b - a for a, b in zip(starts, stops, strict=True))),
        typical_us=_median_us([t for _, t in picked if t is not None]), idle_us=us(idle),
        queries=_count_inside(one_time.query_mask(facts), trace.ts, starts, stops),
        loads=_count_inside(one_time.loading_mask(facts), trace.ts, starts,
                            [int(trace.ts[ops[k]] + trace.dur[ops[k]]) for k, _ in picked]),
        new=tuple(rows), once=once,
    )
    return [Finding(ID, record, impact, _evidence(facts, ops, first_launch, picked, rows))], claim


def _median_us(ns: list[float]) -> float | None:
    return float(np.median(ns)) / 1000.0 if ns else None


def _new_shape_calls(facts, taken: Intervals):
    """The GEMM calls this rule is about: (ops, first launch of each, Input Dims of each, the picked
    calls with their op's typical wait, whether they are a first pass), or None where there are fewer
    than MIN_NEW_SHAPES new shapes, or (without steps) only different layers' first calls."""
    trace = facts.trace
    calls = _first_launches(facts)
    if calls is None:
        return None
    ops, first_launch, waits = calls
    slow = waits >= GEMM_HEURISTICS_MIN_US * 1000
    slow &= ~one_time.covered(taken, trace.ts[ops])
    if int(slow.sum()) < MIN_NEW_SHAPES:
        return None
    dims = [bytes(d.input_dims) if d is not None else b"" for d in trace.decode_args(ops.tolist(), _Dims)]
    picked = _picked(trace, ops, dims, waits, slow)
    if len({dims[k] for k, _ in picked}) < MIN_NEW_SHAPES:
        return None
    once = not facts.steps and _repeated_after(trace, ops, dims, [k for k, _ in picked])
    if not facts.steps and not once and not _a_size_varies([dims[k] for k, _ in picked]):
        return None  # different layers' first calls, nothing varying: lazy-loading's first calls
    return ops, first_launch, dims, picked, once


def _first_launches(facts) -> tuple[np.ndarray, dict[int, int], np.ndarray] | None:
    """The GEMM ops that launch a kernel, in time order, each with its first launch and the ns from its
    start to that launch; None without any."""
    trace = facts.trace
    gemm_ids = [i for i, name in enumerate(trace.names) if name in one_time.GEMM_OPS]
    if not gemm_ids:
        return None
    gemm = facts.is_host & trace.category_mask({"cpu_op"}) & np.isin(trace.name, gemm_ids)
    # the innermost GEMM op above each launch: aten::mm under aten::matmul
    launches = np.flatnonzero(kernel_launches(facts))
    owner = nearest_ancestor(facts, gemm, inclusive=False)[launches]
    keep = owner >= 0
    launches, owner = launches[keep], owner[keep]
    if launches.size == 0:
        return None
    order = np.argsort(trace.ts[launches], kind="stable")
    first_launch: dict[int, int] = {}
    for launch, op in zip(launches[order].tolist(), owner[order].tolist(), strict=True):
        first_launch.setdefault(op, launch)
    ops = np.array(sorted(first_launch, key=lambda o: int(trace.ts[o])), dtype=np.int64)
    waits = np.array([int(trace.ts[first_launch[o]] - trace.ts[o]) for o in ops.tolist()], dtype=np.int64)
    return ops, first_launch, waits


def _picked(trace, ops: np.ndarray, dims: list[bytes], waits: np.ndarray,
            slow: np.ndarray) -> list[tuple[int, float | None]]:
    """The slow calls on a shape their op has not run before, each with what the op takes on shapes it
    has seen (None where it has seen none), kept where it is GEMM_HEURISTICS_RATIO times that."""
    seen: set[tuple[int, bytes]] = set()
    new = np.zeros(ops.size, dtype=bool)
    for k, op in enumerate(ops.tolist()):
        key = (int(trace.name[op]), dims[k])
        new[k] = bool(dims[k]) and key not in seen
        seen.add(key)
    known = ~new
    picked = []
    for k in np.flatnonzero(slow & new).tolist():
        same = known & (trace.name[ops] == trace.name[ops[k]])
        typical = float(np.median(waits[same])) if same.any() else None
        if typical is None or waits[k] >= GEMM_HEURISTICS_RATIO * max(typical, 1.0):
            picked.append((k, typical))
    return picked


def _count_inside(mask: np.ndarray, ts: np.ndarray, starts: list[int], stops: list[int]) -> int:
    """Events of `mask` that start inside any of the spans."""
    return sum(int((mask & (ts >= lo) & (ts < hi)).sum()) for lo, hi in zip(starts, stops, strict=True))


def _rows(facts, ops, dims, first_launch, picked, starts, stops) -> list[NewShape]:
    trace = facts.trace
    work_of = launched_by(facts)
    rows = []
    for (k, _), lo, hi in zip(picked, starts, stops, strict=True):
        op = int(ops[k])
        work = int(work_of[first_launch[op]])
        rows.append(NewShape(trace.event_name(op), _compact(dims[k]),
                             trace.event_name(work) if work >= 0 else "", us(hi - lo), step_at(facts, lo)))
    return rows


def _evidence(facts, ops, first_launch, picked, rows) -> list:
    """The slowest calls, in time order, each with the kernel it launched."""
    trace = facts.trace
    work_of = launched_by(facts)
    ev = []
    slowest = sorted(((k, r) for (k, _), r in zip(picked, rows, strict=True)), key=lambda kr: -kr[1].wait_us)
    for k, row in sorted(slowest[:EVIDENCE_CALLS], key=lambda kr: int(trace.ts[ops[kr[0]]])):
        op = int(ops[k])
        ev.append(evidence(facts, op, ShapeNote(row.dims, row.wait_us)))
        work = int(work_of[first_launch[op]])
        if work >= 0:
            ev.append(evidence(facts, work, KernelNote(us(trace.dur[work]))))
    return ev


def _repeated_after(trace, ops: np.ndarray, dims: list[bytes], picked: list[int]) -> bool:
    """Whether the picked calls are a first pass (_one_time.first_pass): every op and shape among them runs
    again after the last of them (gpu/gemm_new_shapes: a new M each call, never seen again, is not)."""
    calls = [((int(trace.name[op]), dims[k]), int(trace.ts[op])) for k, op in enumerate(ops.tolist())]
    return one_time.first_pass([calls[k] for k in picked], calls)


def _a_size_varies(dims: list[bytes]) -> bool:
    """Whether two of the new shapes are one shape with one size changed (a batch or sequence length that
    varies: gpu/gemm_new_shapes' M in [[M, 1024], [1024, 1024]]), not different layers' shapes (TraceLens'
    tl_b200_eager: vLLM's first pass, four addmm/mm of different weights, each a first call loading its
    kernel). Without steps, only a varying size says the shapes keep changing."""
    flat = [_numbers(d) for d in dims]
    return any(len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) == 1
               for i, a in enumerate(flat) for b in flat[i + 1:])


def _numbers(dims: bytes) -> tuple[int, ...]:
    """The sizes in an Input Dims, in order (the nesting left out)."""
    return tuple(int(n) for n in re.findall(rb"\d+", dims))


def _compact(dims: bytes) -> str:
    """An Input Dims on one line, as torch writes it ("[[1000, 1024], [1024, 1024]]"): TraceLens' traces indent
    it over many lines."""
    text = re.sub(r"\s+", " ", dims.decode("utf-8", "replace"))
    return re.sub(r"\s+\]", "]", re.sub(r"\[\s+", "[", text))
