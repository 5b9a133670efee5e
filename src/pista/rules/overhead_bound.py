"""The overhead-bound rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
overhead-bound`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/overhead_bound.ftl."""

from __future__ import annotations

import msgspec
import numpy as np

from pista import findings
from pista.findings import Context, Evidence, Finding, Record
from pista.query import AUTOGRAD_NODE, pattern_mask
from pista.rules import _one_time as one_time
from pista.rules._claims import other_claims
from pista.rules._common import COMPILED_CODE, PROFILER_HOST_INFLATION, new_shapes, step_at, us
from pista.rules._idle import intersect, ledger, spans, subtract, union
from pista.rules._launches import graph_replays, launch_bound_idle, mean_step_us
from pista.rules._repeated import many_calls_idle
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals

ID = "overhead-bound"
# A symptom: the engine credits it with what is left once every cause's fix is replayed (pista.engine).
SYMPTOM = True
# The share of the host's time in this rule's idle that a CUDA graph of the step (or a compiled step)
# keeps: a graph replays its kernels with no per-op dispatch; gpu/launch_bound's 200 ops a step, graphed
# by hand on the H200, ran at about a tenth of their eager host time.
GRAPH_HOST_SHARE = 0.1
# The verdict's thresholds live with the verdict (pista.findings); shown here for `pista explain`.
OVERHEAD_RATIO = findings.OVERHEAD_RATIO
OVERHEAD_MAX_GPU_BUSY = findings.OVERHEAD_MAX_GPU_BUSY
# The verdict sits near its threshold when the host/GPU ratio is under this many times the
# threshold, or the GPU busy share above this share of its limit: big_gpt_eager_20steps (4.5x,
# 34% busy) and series_linear_train (4.0x, 33%) are near; seed_mm64_warm (43x, 2%) is not.
NEAR_RATIO = 1.6
NEAR_BUSY = 0.75
# Below this share of the step the per-op idle is noise (REVIEW.md: under ~1% is worth nothing).
MIN_SHARE = 0.01
TOP_OPS = 3
# Who reports each claim of Elsewhere (the text names those with a finding in the reading; a claim none of them
# reports is said without pointing at a finding that is not printed, issue 35), and which claims are one-time.
CLAIM_OWNERS = {
    "sync_us": ("host-sync", "trailing-sync", "pageable-memcpy"),
    "data_us": ("gpu-idle",),
    "cold_us": ("cold-start", "dead-window", "lazy-loading"),
    "compile_us": ("recompilation",),
    "profiler_us": ("profiler-overhead", "cold-start", "dead-window"),
    "setup_us": ("cudnn-setup",),
    "launch_us": ("launch-bound",),
    "calls_us": ("many-calls",),
}
ONE_TIME_CLAIMS = ("cold_us", "profiler_us", "setup_us")
# A claim under this share of the step is not worth a word (presentation).
LEFT_MIN_SHARE = 0.005
# The one-time rules whose spans are first calls (a cold step, a dead window, lazy loading): what they claim
# beyond the ledger's cold claim is told with it, as one-time set-up.
FIRST_CALL_RULES = frozenset({"cold-start", "dead-window", "lazy-loading"})


class IdleUnderOp(Record):
    name: str
    calls_per_step: float
    idle_us_per_step: float


class Elsewhere(Record):
    """GPU idle per step claimed by other findings, left out of this one's impact."""

    sync_us: float  # host-sync / trailing-sync / pageable-memcpy
    data_us: float  # gpu-idle
    cold_us: float
    compile_us: float
    profiler_us: float
    setup_us: float  # cudnn-setup
    launch_us: float  # launch-bound
    calls_us: float  # many-calls
    others_us: float  # rules that declare the idle they claim (`claimed_idle`), below
    others: tuple[str, ...]
    # the one-time rules with a finding (_one_time.ORDER): the only ones the text may name; the ledger's
    # one-time claims (cold_us, profiler_us, setup_us) no printed finding owns are said as one-time, unnamed
    one_time: tuple[str, ...] = ()
    # the rules with a finding in the reading, once the engine has settled it (None: not known, without the
    # replay): the text names no other (issue 35: no finding's text may point at one that is not printed)
    printed: tuple[str, ...] | None = None


class OverheadBound(Record):
    cpu_to_device_ratio: float | None  # None: no measurable GPU time
    ratio_threshold: float
    gpu_busy_percent: float
    busy_threshold_percent: float
    self_cpu_total_us: float
    self_device_total_us: float
    window_us: float
    steps: int
    has_steps: bool
    step_us: float  # the median step (the window without steps)
    idle_us_per_step: float  # all the GPU idle in the steps
    per_op_us_per_step: float  # the impact
    elsewhere: Elsewhere
    between_ops_us_per_step: float  # of the impact: the host in no op (Python between ops)
    engine_us_per_step: float  # of that: around the backward, before its first autograd node or after its last
    compiled_us_per_step: float  # of the impact: the host inside compiled code
    top_ops: tuple[IdleUnderOp, ...]
    syncs_per_step: float  # sync calls under ops inside the steps (host-sync's, pageable-memcpy's)
    sync_op: str  # the op that makes most of them
    end_syncs_per_step: float  # of them, those after the step's last kernel launch (its result read back)
    start_syncs_per_step: float  # ...and those before its first (the input's upload): outside a graph too
    near_threshold: bool
    record_shapes: bool
    with_stack: bool
    unprofiled_us_per_step: float  # the per-op idle left if the profiler inflated host time 2x
    where: str  # compiled | partly compiled | python | dispatch: where the host spends it
    new_shapes_percent: float  # of the steps' launching ops, those on a shape seen in one step only
    new_shape_op: str  # the op with most of them ("" under opargs.CHANGING_SHAPES_SHARE: shapes repeat)
    new_shape_calls_per_step: float
    # the CUDA graphs the steps already replay ("" none, "partly", "mostly": _launches.graph_replays): a step
    # that replays graphs is not told to capture one; mostly graphed, its idle is the host's work around them
    graphed: str = ""
    graph_launches_per_step: float = 0.0
    mean_step_us: float = 0.0  # the mean step: what the per-step figures (means over the steps) are shares of

    def named(self, rules: tuple[str, ...], one_time: bool = False) -> tuple[str, ...]:
        """Of the rules, those the text may name: with a finding in the reading (without it known, the one-time
        rules that reported, for a one-time claim; every rule otherwise)."""
        known = self.elsewhere.printed
        if known is None:
            return tuple(o for o in rules if o in self.elsewhere.one_time) if one_time else rules
        return tuple(o for o in rules if o in known)

    def owners(self, claim: str) -> tuple[str, ...] | None:
        """The rules with a finding that a claim of `elsewhere` (sync_us...) is left to (None: no printed one)."""
        return self.named(CLAIM_OWNERS[claim], claim in ONE_TIME_CLAIMS) or None

    def left_to(self) -> list[tuple[str, float, tuple[str, ...]]]:
        """The claims of `elsewhere` worth saying (LEFT_MIN_SHARE of the step) that a printed finding reports:
        (claim, µs per step, its rules), in CLAIM_OWNERS' order; then the declared claims', as "others"."""
        out = [(k, float(getattr(self.elsewhere, k)), self.owners(k) or ()) for k in CLAIM_OWNERS
               if self._worth(getattr(self.elsewhere, k)) and self.owners(k) is not None]
        others = self.named(self.elsewhere.others)
        if self._worth(self.elsewhere.others_us) and others:
            out.append(("others", self.elsewhere.others_us, others))
        return out

    def unowned(self) -> list[tuple[str, float]]:
        """The claims worth saying that no printed finding reports: (claim, µs per step)."""
        return [(k, float(getattr(self.elsewhere, k))) for k in CLAIM_OWNERS
                if self._worth(getattr(self.elsewhere, k)) and self.owners(k) is None]

    def _worth(self, us_per_step: float) -> bool:
        return us_per_step >= LEFT_MIN_SHARE * self.step_us

    def with_printed(self, rules: frozenset[str]) -> OverheadBound:
        """This record once the reading is known: the rules with a finding in it (pista.engine)."""
        return msgspec.structs.replace(self, elsewhere=msgspec.structs.replace(self.elsewhere,
                                                                               printed=tuple(sorted(rules))))

    @property
    def syncs_first(self) -> bool:
        """Syncs mid-step, at least one a step: a graph of the step cannot hold them, so the fix removes
        them first."""
        return self.mid_syncs_per_step >= 1.0

    @property
    def mid_syncs_per_step(self) -> float:
        return self.syncs_per_step - self.end_syncs_per_step - self.start_syncs_per_step

    @property
    def syncs_at_end(self) -> bool:
        """Only syncs after the step's last kernel (its result read back): they stay outside a graph
        of what comes before."""
        return not self.syncs_first and self.end_syncs_per_step >= 1.0

    @property
    def syncs_at_start(self) -> bool:
        """Syncs before the step's first kernel (its input's upload), none mid-step: a graph of what
        follows leaves them outside."""
        return not self.syncs_first and self.start_syncs_per_step >= 1.0


class GpuWaitedUnder(Record):
    """Note on the call of an op the GPU idled under the most."""

    idle_us: float
    idle_us_per_step: float


class BetweenOps(Record):
    """Note on the longest per-op idle with the host in no op."""

    idle_us: float
    engine: bool = False  # most of it around the backward, the autograd engine starting or finishing


def check(ctx: Context) -> list[Finding]:
    s = ctx.summary
    if not s.host_bound:
        return []
    facts = ctx.facts
    book = ledger(facts)
    if book is None:
        return []
    launch = launch_bound_idle(facts)
    calls = subtract(many_calls_idle(facts), launch)
    rest = subtract(subtract(book.per_op, launch), calls)
    rest, fired, others, first_calls = _claimed(ctx, rest)
    impact = ctx.per_step(rest.total)
    if impact.share < MIN_SHARE:
        return []
    n = ctx.step_count
    trace = facts.trace
    # the outermost ops (_idle.outermost_ops of every op): the ops whose parent is no op
    ops = facts.is_host & trace.category_mask({"cpu_op"})
    outer = np.flatnonzero(ops & ~(ops[facts.parent] & (facts.parent >= 0)))  # a root's -1 reads the last
    del ops
    idle = rest.covered(trace.ts[outer], trace.ts[outer] + trace.dur[outer])  # per outermost op
    in_ops = intersect(rest, spans(facts, outer[idle > 0]))  # the others add nothing
    compiled = intersect(rest, spans(facts, np.flatnonzero(facts.is_host & pattern_mask(facts, COMPILED_CODE))))
    top, evidence = _top_ops(facts, outer, idle, n)
    between = subtract(rest, in_ops)
    engine = intersect(between, _engine_gaps(facts, outer))
    evidence += _longest_between(facts, between, engine, book.device)
    ratio = s.self_cpu_total_us / s.self_device_total_us if s.self_device_total_us else None
    busy = s.gpu_busy_share or 0.0
    shapes, stack = _profiler_options(facts)
    step_ns = ctx.step_ns
    graphs = graph_replays(facts)
    unprofiled = _unprofiled(impact.us, us(step_ns), busy)
    record = OverheadBound(
        cpu_to_device_ratio=ratio, ratio_threshold=OVERHEAD_RATIO, gpu_busy_percent=100.0 * busy,
        busy_threshold_percent=100.0 * OVERHEAD_MAX_GPU_BUSY, self_cpu_total_us=s.self_cpu_total_us,
        self_device_total_us=s.self_device_total_us, window_us=s.window_us, steps=n, has_steps=bool(facts.steps), step_us=us(step_ns),
        idle_us_per_step=us(book.idle.total) / n, per_op_us_per_step=impact.us,
        elsewhere=Elsewhere(
            sync_us=us(book.sync.total) / n, data_us=us(book.total("data")) / n,
            cold_us=us(book.total("cold") + first_calls) / n, compile_us=us(book.total("compile")) / n,
            profiler_us=us(book.total("profiler")) / n, setup_us=us(book.total("setup")) / n,
            launch_us=us(launch.total) / n,
            calls_us=us(calls.total) / n, others_us=us(sum(others.values())) / n, others=tuple(others),
            one_time=fired),
        between_ops_us_per_step=us(between.total) / n, engine_us_per_step=us(engine.total) / n,
        compiled_us_per_step=us(compiled.total) / n,
        top_ops=top, syncs_per_step=book.syncs_per_step, sync_op=book.sync_op,
        end_syncs_per_step=book.end_syncs_per_step, start_syncs_per_step=book.start_syncs_per_step,
        near_threshold=_near_threshold(ratio, busy),
        record_shapes=shapes, with_stack=stack, unprofiled_us_per_step=unprofiled,
        where=_where(compiled.total, others.get("compile-overhead", 0), between.total, rest.total),
        graphed=graphs.graphed, graph_launches_per_step=graphs.per_step, mean_step_us=mean_step_us(facts),
        **new_shapes(facts))
    return [Finding(ID, record, impact, evidence, edit=Edit("step graphed", host_scale_spans=((rest, GRAPH_HOST_SHARE),)))]


def _claimed(ctx: Context, rest: Intervals) -> tuple[Intervals, tuple[str, ...], dict[str, int], int]:
    """The per-op idle left once other findings take theirs: the one-time rules that fired, the ns each other rule
    takes, and the ns of first calls (cold-start's, dead-window's and lazy-loading's: one-time set-up, counted with
    the ledger's)."""
    # first the spans the one-time rules' findings own: the ledger's set-up and cold claims hold only part of
    # them (not the GEMMs that wait for cuBLAS on new shapes, gpu/gemm_new_shapes: 3.0 ms a step was both
    # rules' whole step; not a first call seen once in a window without steps, window_sync_cold without its
    # region: 108.7 ms of lazy-loading's first calls were this rule's "per-op overhead" with graph advice)
    fired = tuple(rule_id for rule_id in one_time.ORDER if one_time.findings(ctx, rule_id))
    claims = {rule_id: one_time.claimed_by(ctx, rule_id) for rule_id in fired}
    # then the idle the other rules declare they claim (their `claimed_idle`), in catalogue order
    claims |= other_claims(ctx.facts, {ID, "launch-bound", "many-calls", "gpu-idle"})
    others: dict[str, int] = {}
    first_calls = 0
    for rule_id, claim in claims.items():
        taken = intersect(rest, claim).total
        if taken <= 0:
            continue
        if rule_id in FIRST_CALL_RULES:
            first_calls += taken
        else:
            others[rule_id] = taken
        rest = subtract(rest, claim)
    return rest, fired, others, first_calls


def _longest_between(facts: Facts, between: Intervals, engine: Intervals, device: int) -> list[Evidence]:
    """The longest idle with the host in no op, and whether most of it is the autograd engine's ([] for none)."""
    if not between.start.size:
        return []
    k = int(np.argmax(between.end - between.start))
    a, b = int(between.start[k]), int(between.end[k])
    if b - a <= 0:
        return []
    in_engine = bool(engine.covered(np.array([a]), np.array([b]))[0] * 2 >= b - a)
    return [Evidence.span("GPU idle", f"GPU {device}", a, b, step_at(facts, a), BetweenOps(us(b - a), in_engine))]


def _near_threshold(ratio: float | None, busy: float) -> bool:
    """Whether the verdict was close: the host-to-device ratio within NEAR_RATIO of its threshold, or the GPU busy
    past NEAR_BUSY of its limit."""
    return bool((ratio is not None and ratio < NEAR_RATIO * OVERHEAD_RATIO) or busy > NEAR_BUSY * OVERHEAD_MAX_GPU_BUSY)


def _engine_gaps(facts: Facts, outer: np.ndarray) -> Intervals:
    """Per step, the stretches around its backward where no op runs on any thread: from the last op
    before the first autograd node to that node, and from the last node to the next op (the main
    thread in backward() while the engine's thread starts or finishes; run_mlp_stack 190-270 µs a step,
    as an expert measured)."""
    trace = facts.trace
    nodes = facts.is_host & pattern_mask(facts, AUTOGRAD_NODE)
    idx = np.flatnonzero(nodes & (facts.event_step >= 0)) if facts.steps else np.flatnonzero(nodes)
    others = outer[~nodes[outer]]
    if idx.size == 0 or others.size == 0:
        return union(np.empty(0), np.empty(0))
    step = facts.event_step[idx] if facts.steps else np.zeros(idx.size, dtype=np.int64)
    n = int(step.max()) + 1
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(first, step, trace.ts[idx])
    np.maximum.at(last, step, trace.ts[idx] + trace.dur[idx])
    ran = first <= last
    first, last = first[ran], last[ran]
    ends = np.sort(trace.ts[others] + trace.dur[others])
    starts = np.sort(trace.ts[others])
    before = np.searchsorted(ends, first, side="right") - 1  # the last op to end before the first node
    after = np.searchsorted(starts, last, side="left")  # the first op to start after the last node
    lo = np.concatenate([np.where(before >= 0, ends[np.maximum(before, 0)], first), last])
    hi = np.concatenate([first, np.where(after < starts.size, starts[np.minimum(after, starts.size - 1)], last)])
    return union(lo, hi)


def _unprofiled(per_op_us: float, step_us: float, busy: float) -> float:
    """The per-op idle a step would keep with its host time divided by PROFILER_HOST_INFLATION: the
    host-bound step shrinks to that host time, or to its GPU work, and its idle with it, the per-op
    share alike (run_mlp_stack: 792 µs of 2.44 ms; an expert's replay of its kernels at half the host
    time left about 1.0 ms. Taking half the step off the idle instead left 137 µs)."""
    gpu_us = busy * step_us
    idle_us = step_us - gpu_us
    if idle_us <= 0:
        return 0.0
    left = max(0.0, step_us / PROFILER_HOST_INFLATION - gpu_us)
    return per_op_us * min(1.0, left / idle_us)


def _where(compiled: int, wrapper: int, between: int, per_op: int) -> str:
    """Where the host spends the per-op idle: compiled code (with the torch.compile wrapper's idle,
    compile-overhead's, on either side), part of it, Python between ops, or the ops' dispatch."""
    if compiled + wrapper >= 0.5 * (per_op + wrapper):
        return "compiled"
    if compiled + wrapper > 0:  # some of the step runs compiled: "try torch.compile" would mislead
        return "partly compiled"
    if between >= 0.5 * per_op:
        return "python"
    return "dispatch"


def _top_ops(facts: Facts, outer: np.ndarray, idle: np.ndarray, n: int) -> tuple[tuple[IdleUnderOp, ...],
                                                                                 list[Evidence]]:
    """The op names the GPU idled under the most (their outermost calls, with the idle under each),
    and the call of each with the most idle under it."""
    trace = facts.trace
    if outer.size == 0:
        return (), []
    names, inverse = np.unique(trace.name[outer], return_inverse=True)
    totals = np.bincount(inverse, weights=idle.astype(np.float64))
    counts = np.bincount(inverse)
    rows, evidence = [], []
    for k in np.argsort(-totals, kind="stable")[:TOP_OPS].tolist():
        if totals[k] <= 0:
            break
        members = np.flatnonzero(inverse == k)
        best = int(outer[members[np.argmax(idle[members])]])
        rows.append(IdleUnderOp(trace.names[int(names[k])], counts[k] / n, us(totals[k]) / n))
        evidence.append(Evidence.of(facts, best, GpuWaitedUnder(us(idle[members].max()), us(totals[k]) / n)))
    return tuple(rows), evidence


OPTIONS_SLICE = 1 << 16  # events looked at a time for the first ops (memory, not output)
OPTIONS_OPS = 20  # the first ops whose args tell whether shapes were recorded


def _profiler_options(facts: Facts) -> tuple[bool, bool]:
    """Whether the trace was recorded with record_shapes (ops carry Input Dims) and with_stack
    (python_function events)."""
    trace = facts.trace
    ops: list[int] = []  # the first ops, looked for a slice of the trace at a time
    for lo in range(0, len(trace), OPTIONS_SLICE):
        part = slice(lo, lo + OPTIONS_SLICE)
        found = lo + np.flatnonzero(facts.is_host[part] & trace.category_mask({"cpu_op"}, part))
        ops += found[:OPTIONS_OPS - len(ops)].tolist()
        if len(ops) == OPTIONS_OPS:
            break
    shapes = any("Input Dims" in trace.args(i) for i in ops)
    stack = "python_function" in trace.categories and bool(trace.category_mask({"python_function"}).any())
    return shapes, stack
