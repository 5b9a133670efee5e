"""The cudnn-setup rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
cudnn-setup`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/cudnn_setup.ftl."""

from __future__ import annotations

import msgspec
import numpy as np

from pista.findings import Context, Finding, Record
from pista.query import SYNC_NAMES, name_mask
from pista.rules import _one_time as one_time
from pista.rules._common import evidence, idle_ns_in, kernel_launches, step_at, us
from pista.rules._cudnn import inside, recurring_steps, slow_calls
from pista.trace.facts import Facts, Intervals

ID = "cudnn-setup"

# Under 1% of the median step it is noise (REVIEW.md).
MIN_STEP_SHARE = 0.01
# Slow calls that launch this many kernels each, and synchronize, are cudnn.benchmark timing
# algorithms (gpu/multiscale_benchmark: dozens per call; a plan build launches its one kernel).
BENCHMARK_MIN_LAUNCHES = 4.0
EVIDENCE_CALLS = 3  # the slowest calls shown; presentation


class SetupCall(Record):
    """One cuDNN call that set up its shape."""

    op: str
    dims: str  # its Input Dims, as recorded ("" without record_shapes)
    idle_us: float  # GPU idle inside the call
    step: int | None


class CudnnSetup(Record):
    calls: int
    ops: tuple[str, ...]
    kind: str  # attention | conv | rnn
    benchmark: bool  # the calls time algorithms (cudnn.benchmark)
    launches_per_call: float
    syncs: int
    steps: int  # ProfilerSteps the window holds
    in_steps: tuple[int, ...]
    idle_us: float  # GPU idle in those calls, less the ops' usual: the impact's total
    per_call_us: float  # median GPU idle in one slow call
    typical_us: float | None  # median GPU idle in the same ops' other calls, where there are some
    new_shapes: int | None  # slow calls on an input shape not seen earlier (None: shapes not recorded)
    slowest: tuple[SetupCall, ...]
    once: bool = False  # a window without steps whose set-up shapes all run again later, fast: a first pass


class CallNote(Record):
    """Note on a slow call."""

    dims: str
    idle_us: float
    launches: int


class _Dims(msgspec.Struct):
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=msgspec.Raw(b""))


def check(ctx: Context) -> list[Finding]:
    return one_time.findings(ctx, ID)


def detect(ctx: Context, taken: Intervals) -> tuple[list[Finding], Intervals]:
    facts = ctx.facts
    trace = facts.trace
    idx, idle = slow_calls(facts)
    free = ~one_time.covered(taken, trace.ts[idx])
    idx, idle = idx[free], idle[free]
    steps = recurring_steps(facts, idx)  # what is left outside cold steps, dead windows and compiling
    if steps is None:
        return [], one_time.EMPTY
    claim = one_time.spans(trace.ts[idx], trace.ts[idx] + trace.dur[idx])
    typical = _typical_idle(facts, idx)
    total = max(0.0, one_time.idle_ns(facts, one_time.minus(claim, taken)) - (typical or 0.0) * idx.size)
    dims = _dims(facts, idx)
    # without steps, set-up whose every shape runs again later, fast, is a first pass (a cold forward), paid once
    once = not facts.steps and _warmed_up(facts, idx, dims)
    impact = ctx.once(total) if once else ctx.per_step(total)
    if impact.share < MIN_STEP_SHARE:
        return [], one_time.EMPTY

    names = sorted({trace.event_name(i) for i in idx.tolist()})
    launches, syncs = _launches_and_syncs(facts, idx)
    benchmark = bool(syncs.sum()) and float(launches.mean()) >= BENCHMARK_MIN_LAUNCHES
    kind = _kind(names)
    slowest = np.argsort(-idle, kind="stable")[:EVIDENCE_CALLS]
    rows = tuple(SetupCall(trace.event_name(int(idx[k])), dims[k], us(idle[k]), step_at(facts, int(trace.ts[idx[k]])))
                 for k in slowest.tolist())
    record = CudnnSetup(
        calls=int(idx.size), ops=tuple(names), kind=kind, benchmark=benchmark,
        launches_per_call=float(launches.mean()), syncs=int(syncs.sum()), steps=len(facts.steps),
        in_steps=steps, idle_us=us(total), per_call_us=us(float(np.median(idle))),
        typical_us=None if typical is None else typical / 1000.0, new_shapes=_new_shapes(facts, idx, dims),
        slowest=rows, once=once)
    ev = [evidence(facts, int(idx[k]), CallNote(dims[k], us(idle[k]), int(launches[k]))) for k in sorted(slowest.tolist())]
    return [Finding(ID, record, impact, ev)], claim


def _kind(names: list[str]) -> str:
    """What the set-up is for, by its ops' names: attention, an RNN, else convolution."""
    return next((kind for kind in ("attention", "rnn") if any(kind in n for n in names)), "conv")


def _typical_idle(facts: Facts, idx: np.ndarray) -> float | None:
    """Median GPU idle (ns) in the other calls of the slow calls' ops, where there are some."""
    trace = facts.trace
    same = np.flatnonzero(facts.is_host & np.isin(trace.name, np.unique(trace.name[idx])))
    same = same[~np.isin(same, idx)]
    if same.size == 0:
        return None
    return float(np.median(idle_ns_in(facts, same)))


def _warmed_up(facts: Facts, idx: np.ndarray, dims: list[str]) -> bool:
    """Whether the slow calls are a first pass (_one_time.first_pass) over shapes the same ops run again without
    set-up: keyed by op and input shape (the op alone, where shapes are not recorded)."""
    trace = facts.trace
    same = np.flatnonzero(facts.is_host & np.isin(trace.name, np.unique(trace.name[idx])))
    later = same[~np.isin(same, idx)]
    return one_time.first_pass(
        [((int(trace.name[i]), d), int(trace.ts[i])) for i, d in zip(idx.tolist(), dims, strict=True)],
        [((int(trace.name[i]), d), int(trace.ts[i])) for i, d in zip(later.tolist(), _dims(facts, later), strict=True)])


def _dims(facts: Facts, idx: np.ndarray) -> list[str]:
    decoded = facts.trace.decode_args(idx.tolist(), _Dims)
    return [bytes(d.input_dims).decode("utf-8", "replace") if d is not None else "" for d in decoded]


def _new_shapes(facts: Facts, idx: np.ndarray, dims: list[str]) -> int | None:
    """How many slow calls had an input shape their op had not had earlier in the trace."""
    if not any(dims):
        return None
    trace = facts.trace
    calls = np.flatnonzero(facts.is_host & np.isin(trace.name, np.unique(trace.name[idx]))
                           & (trace.ts <= int(trace.ts[idx].max())))
    calls = calls[np.argsort(trace.ts[calls], kind="stable")]
    slow = dict(zip(idx.tolist(), dims, strict=True))
    others = calls[~np.isin(calls, idx)]
    shape = dict(zip(others.tolist(), _dims(facts, others), strict=True)) | slow
    seen: set[tuple[int, str]] = set()
    new = 0
    for i in calls.tolist():
        key = (int(trace.name[i]), shape[i])
        new += i in slow and key not in seen
        seen.add(key)
    return new


def _launches_and_syncs(facts: Facts, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per call: the kernels launched under it, and the synchronize calls under it."""
    order = np.argsort(idx)
    counts = []
    for mask in (kernel_launches(facts), facts.is_host & name_mask(facts, SYNC_NAMES)):
        call = inside(facts, idx, np.flatnonzero(mask))
        per_call = np.zeros(idx.size, dtype=np.int64)
        per_call[order] = np.bincount(np.searchsorted(idx[order], call[call >= 0]), minlength=idx.size)
        counts.append(per_call)
    return counts[0], counts[1]
