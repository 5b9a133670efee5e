"""Findings, their evidence, the verdict, and `analyze()`: the one entry point that runs the catalogue.

Rules read derived facts (`pista.trace.facts`) and the rebuilt table, never raw JSON; renderers
read an `Analysis`, never the trace file.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field, is_dataclass
from enum import Enum
from typing import Any

import msgspec
import numpy as np

from pista.allocator import phase_done
from pista.cpuload import busy_cpu
from pista.table import Table, build_table
from pista.trace.facts import Facts, derive, per_facts
from pista.trace.model import Trace

# Verdict thresholds, from the H200 fixtures: warm 64x64 matmul_add spends 43x more host time than
# GPU time with the GPU busy 2.2% of the window; warm 4096 spends 1.1x with the GPU busy 79%. The
# eager training loops sit in between and are host-bound all the same: big_gpt_eager_20steps 4.5x
# at 34% busy (16,939 sub-ms gaps), series_linear_train 4.0x at 33%, capture_profile_item 3.8x at
# 36%; balanced stay seed_mm4096_compile (2.5x at 37%) and capture_mm4096_compile_sync (2.0x, 48%).
OVERHEAD_RATIO = 3.0  # Self CPU total / Self CUDA total at or above which the host dominates
OVERHEAD_MAX_GPU_BUSY = 0.4  # ... provided the GPU sits idle for at least 60% of the window
# Kernel (compute) busy share at or above which the GPU is the limit; copies and memsets do not
# count: gpu/pageable_memcpy is 90% busy copying and 0% computing.
COMPUTE_MIN_GPU_BUSY = 0.6
COMPUTE_MAX_RATIO = 3.0


class Record(msgspec.Struct, frozen=True):
    """Frozen data whose methods msgspec builds in C: the rules' typed records and evidence notes,
    and the catalogue's entries. A frozen dataclass's generated methods cost ~0.5 ms each at import,
    and the catalogue has ~160 of these classes."""


class Severity(str, Enum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "critical": 2}[self.value]


# Severity follows what fixing a finding saves, as a share of the median step (issue 14): a fifth of
# the step is the first thing to fix, a twentieth is worth a change, below that it is information.
CRITICAL_SHARE = 0.20
WARNING_SHARE = 0.05
# The top fix is the biggest finding that saves at least this share of the step; below it nothing is
# worth doing first (seed_mm4096_warm: its GEMM runs at the card's measured ceiling).
TOP_FIX_MIN_SHARE = WARNING_SHARE
# Findings whose saving is the remainder once every specific cause is fixed, and whose fix is the
# largest change (overhead-bound: capture the step as a CUDA graph, compile it). The top fix is a
# specific finding worth TOP_FIX_MIN_SHARE where there is one: on gpu/host_sync_item the per-op rest
# (55%) outranks the syncs (38%), yet the syncs come out first, since a step that syncs cannot be
# graphed; on series_mlp_eager AdamW(fused=True) took the step from 6.1 to 3.4 ms unprofiled.
UMBRELLA_RULES = frozenset({"overhead-bound", "compute-bound"})
# ... provided the specific finding saves at least this share of what the umbrella does: gpu/gpt2_conv1d's
# autocast-casts (5.8% against overhead-bound's 57.5%) and layout_r50_cl_bf16's (6.9% against 66.8%) are
# second fixes; series_mlp_eager's (16.8/59.6) and gpu/adamw_foreach_bf16's fused=True (14.1/64.2,
# REVIEW.md's 6.1 -> 3.4 ms) stay first.
UMBRELLA_YIELD = 0.2
# Findings that say the program's results are wrong, not only slow: they come first, whatever they save
# (gpu/resnet50_train: batch norm on batch statistics in inference; an expert fixes that before speed),
# unless they are info (said under a condition).
WRONG_RESULTS_RULES = frozenset({"inference-train-mode"})


SEVERITY_ORDER = ("info", "warning", "critical")


# A one-time cost (set-up, a first compile, the profiler's buffers) is at most a warning: it slows the
# window it was profiled in, not the steps that follow. Spread over the steps it read as 100% of a
# step on gpu/eval_first_call (48.5 ms once in a 3.8 ms step) and gpu/profiler_first_step's shares
# summed to 121%; an expert puts the steady-state fix first and says "warm up" after it.
ONE_TIME_MAX_SEVERITY = Severity.WARNING


def severity_of(share: float, once: bool = False) -> Severity:
    if share >= CRITICAL_SHARE:
        severity = Severity.CRITICAL
    else:
        severity = Severity.WARNING if share >= WARNING_SHARE else Severity.INFO
    return min(severity, ONE_TIME_MAX_SEVERITY, key=lambda s: s.rank) if once else severity


@dataclass(frozen=True)
class Impact:
    """What fixing a finding would save: µs per step (per window without steps) and that share of
    the median step (or the window), 0..1; or, `once`, a one-time cost: its µs in the whole window
    and that share of the window's wall time. How it was estimated is the rule's `basis` text."""

    us: float
    share: float
    once: bool = False
    # set by the engine (pista.engine) where the finding's edit was replayed: `us`/`share` are then what the
    # replay saves per step as profiled, `alone_us` what the fix saves alone (before the engine's order
    # credits each µs once), `unprofiled_*` the saving predicted without the profiler, which ranks
    replayed: bool = False
    alone_us: float | None = None
    unprofiled_us: float | None = None
    unprofiled_share: float | None = None

    @classmethod
    def none(cls) -> Impact:
        return cls(0.0, 0.0)

    @property
    def rank_share(self) -> float:
        """The share that sets severity and order: the unprofiled prediction where there is one."""
        return self.share if self.unprofiled_share is None else self.unprofiled_share


@dataclass(frozen=True)
class Evidence:
    """One event that shows the finding: where it ran and when (µs, as in the trace file).

    `detail` is the rule's typed note about this event (a `Record` of the rule's module);
    `note` is its text in `lang`."""

    name: str
    lane: str
    step: int | None
    ts_us: float
    dur_us: float
    detail: Any = None
    lang: str = "en"
    stack: tuple[str, ...] = ()  # the user's Python frames above the event, innermost first

    @classmethod
    def of(cls, facts: Facts, i: int, detail: Any = None) -> Evidence:
        trace = facts.trace
        return cls(
            name=trace.event_name(i),
            lane=facts.lane_of(i),
            step=facts.step_of(i),
            ts_us=float(trace.ts[i]) / 1000.0,
            dur_us=float(trace.dur[i]) / 1000.0,
            detail=detail,
            stack=user_stack(facts, i),
        )

    @classmethod
    def span(cls, name: str, lane: str, start_ns: int, end_ns: int, step: int | None = None,
             detail: Any = None) -> Evidence:
        """Evidence that is an interval rather than one event (a gap, a window)."""
        return cls(name, lane, step, start_ns / 1000.0, (end_ns - start_ns) / 1000.0, detail)

    @property
    def note(self) -> str:
        from pista.i18n import note_text

        return note_text(self.detail, self.lang)

    def to_dict(self) -> dict[str, Any]:
        """As --format json writes it: ts and dur in µs, like the trace file's own fields."""
        return {"name": self.name, "lane": self.lane, "step": self.step, "ts": self.ts_us, "dur": self.dur_us,
                "note": self.note, "stack": list(self.stack)}


# python_function frames that are not the user's code: the interpreter's, torch's, installed packages',
# the standard library's (seen in gpu/host_sync_item_stack: `<built-in method item ...>`,
# `torch/_ops.py(1079): __call__`, `<frozen os>(680): __getitem__`, `enum.py(1267): __hash__`).
NOT_USER_FRAME = re.compile(r"^<|(^|/)(torch|torchvision|torchaudio|triton|site-packages|dist-packages|python3\.\d+)/"
                            r"|^(enum|os|abc|typing|functools|contextlib|threading|runpy|weakref|copy)\.py\(")


def user_stack(facts: Facts, i: int) -> tuple[str, ...]:
    """The user's Python frames above event i (with_stack=True traces), innermost first."""
    trace = facts.trace
    python = trace.category_id("python_function")
    if python < 0:
        return ()
    frames = []
    j = int(facts.parent[i])
    while j >= 0:
        if int(trace.cat[j]) == python:
            name = trace.event_name(j)
            if not NOT_USER_FRAME.search(name):
                frames.append(name)
        j = int(facts.parent[j])
    return tuple(frames)


@dataclass(eq=False)
class Finding:
    """What a rule found: its typed `record` (the rule's `Record`), what fixing it saves, and
    the events that show it. Title, message, advice, the top-fix line and the impact's basis are
    views of the record, written by `pista.i18n` in `lang`."""

    rule: str
    record: Any
    impact: Impact
    evidence: list[Evidence] = field(default_factory=list)
    severity: Severity | None = None  # from the impact, unless a rule documents an exception
    lang: str = "en"
    edit: Any = None  # the pista.timeline.Edit its fix makes, which the engine replays (None: not yet)
    severity_fixed: bool = False  # the rule set the severity (a documented exception), not the impact
    # a symptom (pista.engine: credited after the causes, with what they leave) or a cause; None: the rule's
    # SYMPTOM. A rule that tells a cause from its symptom per finding sets it (many-calls: a Python loop)
    symptom: bool | None = None

    def __post_init__(self) -> None:
        if self.severity is None:
            self.severity = severity_of(self.impact.rank_share, self.impact.once)
        else:
            self.severity_fixed = True

    def _text(self, part: str) -> str:
        from pista.i18n import finding_text

        return finding_text(self, part, self.lang)

    @property
    def title(self) -> str:
        return self._text("title")

    @property
    def message(self) -> str:
        return self._text("message")

    @property
    def advice(self) -> str:
        return self._text("advice")

    @property
    def fix(self) -> str:
        """One line: the event and the change, for the top fix."""
        return self._text("fix")

    @property
    def basis(self) -> str:
        if self.impact.replayed:
            from pista.i18n import replay_basis

            return replay_basis(self, self.lang)
        return self._text("basis")

    @property
    def where(self) -> str | None:
        """The user's innermost frame of the first evidence recorded with a stack."""
        return next((e.stack[0] for e in self.evidence if e.stack), None)

    @property
    def fix_here(self) -> str:
        """The top-fix line, with the user's code it points at where the trace has stacks."""
        from pista.i18n import word

        where = self.where
        return self.fix if where is None else f"{self.fix} ({word('in', self.lang)} {where})"

    @property
    def metrics(self) -> dict[str, Any]:
        return record_fields(self.record)

    def to_dict(self) -> dict[str, Any]:
        from pista.engine import is_symptom

        assert self.severity is not None
        return {"rule": self.rule, "severity": self.severity.value, "symptom": is_symptom(self),
                "title": self.title, "message": self.message,
                "advice": self.advice, "impact": {"us": self.impact.us, "share": self.impact.share,
                                                  "once": self.impact.once, "basis": self.basis,
                                                  "replayed": self.impact.replayed, "alone_us": self.impact.alone_us,
                                                  "unprofiled_us": self.impact.unprofiled_us,
                                                  "unprofiled_share": self.impact.unprofiled_share},
                "evidence": [e.to_dict() for e in self.evidence], "metrics": self.metrics}


def record_fields(record: Any) -> dict[str, Any]:
    """A rule's record as plain data (JSON's `metrics`)."""
    if isinstance(record, msgspec.Struct):
        return _plain(record)  # type: ignore[no-any-return]
    return asdict(record) if is_dataclass(record) else dict(record or {})


def _plain(value: Any) -> Any:
    """Records (and dataclasses, named tuples, lists, tuples and dicts holding them) as dicts, all
    the way down, the rest as it is: what dataclasses.asdict gives for the records the rules have.
    Unlike asdict it copies no leaf value and leaves a dict's keys (and a dict subclass's type)."""
    if isinstance(value, msgspec.Struct):
        return {name: _plain(getattr(value, name)) for name in value.__struct_fields__}
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(_plain(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass
class Summary:
    self_cpu_total_us: float
    self_device_total_us: float
    verdict: str  # overhead-bound | compute-bound | balanced | cpu-only
    window_us: float
    gpu_busy_us: float
    gpu_busy_share: float | None
    kernel_busy_share: float | None  # kernels only: copies and memsets are not compute
    steps: int
    step_numbers: list[int]
    devices: list[str]
    events: int
    # µs of device work per step for each purpose (pista.purpose.PURPOSES), 0 where none ran
    gpu_time_by_purpose: dict[str, float] = field(default_factory=dict)
    # per host thread: µs of self time per step in forward, backward, optimizer, data, other, and
    # waiting (blocked in syncs, or asleep while the autograd thread works): pista.hosttime
    host_time_by_region: dict[str, dict[str, float]] = field(default_factory=dict)
    # profile_memory=True traces: per device, peak_allocated_bytes and peak_reserved_bytes
    memory: list[dict[str, Any]] = field(default_factory=list)
    # the median step's wall time (at least its GPU busy time), or the window's without steps: what
    # impact shares are of, and what `pista check --baseline` compares
    step_us: float = 0.0
    # the engine's replay of the steps (pista.timeline): its error against the trace unchanged, the mean
    # step as replayed, and as predicted without the profiler; None without device work to replay
    replay_error: float | None = None
    replayed_step_us: float | None = None
    unprofiled_step_us: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# `pista analyze --format json` and `pista check --format json`; bump on a breaking change (2: a one-time
# cost's impact, `once`, is its whole time and a share of the window, not per step; findings in reading order)
JSON_SCHEMA_VERSION = 2
KERNEL_ROWS = 50  # device work names in JSON's `kernels`, most time first


@dataclass(eq=False)
class Analysis:
    source: str
    summary: Summary
    findings: list[Finding]
    table: Table
    facts: Facts
    notices: list[str]

    def finding(self, rule: str) -> Finding | None:
        return next((f for f in self.findings if f.rule == rule), None)

    def __repr__(self) -> str:
        # one line, not the dataclass's dump of every column of the trace (a notebook's text/plain, a REPL)
        top = self.top_fix
        return (f"<pista Analysis of {self.source}: {self.summary.verdict}, {len(self.findings)} finding(s)"
                + (f"; start here: {top.rule}" if top is not None else "") + ">")

    def _repr_html_(self) -> str:
        """Jupyter: the report's summary and findings, inline (pista.render.notebook)."""
        from pista.render.notebook import render_html

        return render_html(self)

    @property
    def rules_fired(self) -> list[str]:
        return [f.rule for f in self.findings]

    @property
    def top_fix(self) -> Finding | None:
        """The finding to start with: one that makes the results wrong (WRONG_RESULTS_RULES), else the
        specific one that saves most, if it saves enough to be worth it, else the umbrella one (see
        UMBRELLA_RULES); steady and unconditional findings before one-time and info ones."""
        wrong = next((f for f in self.findings if f.rule in WRONG_RESULTS_RULES and f.severity != Severity.INFO), None)
        if wrong is not None:
            return wrong
        worth = sorted((f for f in self.findings if f.impact.rank_share >= TOP_FIX_MIN_SHARE),
                       key=lambda f: (-f.impact.rank_share, -f.impact.us))
        # a one-time cost comes first only where no steady cost is worth fixing, and a finding said under a
        # condition (info above the warning share: cpu-fp32-gemm's "on a CPU with native bf16") only where
        # no unconditional one is (an expert review: a 30% conditional dtype change came before an 18.5%
        # anomaly detection left on, free to turn off)
        worth = [f for f in worth if not f.impact.once] or worth
        from pista.engine import is_symptom

        # said under a condition: at info by the rule's own choice, though worth a warning (a symptom at info
        # is quiet by the engine's policy, not conditional)
        worth = [f for f in worth if not (f.severity == Severity.INFO and f.severity_fixed and not is_symptom(f)
                                          and f.impact.rank_share >= WARNING_SHARE)] or worth
        # a replayed symptom (pista.engine) is what is left once the causes are fixed: a cause worth fixing
        # comes before it, whatever the symptom's rest (issue 33: in 8 of 9 measured pairs a symptom came
        # first where the planted cause saved 15-95%; savings/h100/autocast_train_small: the weight casts,
        # 18% of the step, before the 64% left to launch-bound). A graph cannot hold a sync or a graph break.
        umbrellas = {f.rule for f in worth if f.rule in UMBRELLA_RULES or (f.impact.replayed and is_symptom(f))}
        umbrella = max((f.impact.rank_share for f in worth if f.rule in umbrellas and not f.impact.replayed),
                       default=0.0)
        specific = (f for f in worth if f.rule not in umbrellas and f.impact.rank_share >= UMBRELLA_YIELD * umbrella)
        return next(specific, worth[0] if worth else None)

    def to_dict(self, row_limit: int = 25) -> dict[str, Any]:
        from pista.efficiency import kernel_rows

        sort_by = "cuda_time_total" if self.facts.has_gpu else "cpu_time_total"
        top = self.top_fix
        from pista import __version__

        return {
            "schema_version": JSON_SCHEMA_VERSION,
            "pista_version": __version__,
            "source": self.source,
            "summary": dict(self.summary.to_dict(),
                            top_fix=None if top is None else {"rule": top.rule, "text": top.fix_here}),
            "findings": [f.to_dict() for f in self.findings],
            "kernels": [asdict(k) for k in kernel_rows(self.facts, KERNEL_ROWS)],
            "table": self.table.to_dict(sort_by, row_limit),
            "notices": self.notices,
        }


def summarize(facts: Facts, table: Table) -> Summary:
    lo, hi = facts.window
    window = max(hi - lo, 1)
    busy = _busy_ns(facts)
    compute = max((b.clip(lo, hi).total for b in facts.kernel_busy.values()), default=0)
    cpu, dev = table.self_cpu_total_us, table.self_device_total_us
    share = busy / window if facts.has_gpu else None
    compute_share = compute / window if facts.has_gpu else None
    if not facts.has_gpu:
        verdict = "cpu-only"
    elif cpu <= 0:
        verdict = "balanced"  # no host time recorded (no host events, zero durations): nothing to weigh
    elif compute_share is not None and compute_share >= COMPUTE_MIN_GPU_BUSY and cpu <= COMPUTE_MAX_RATIO * dev:
        verdict = "compute-bound"
    elif cpu >= OVERHEAD_RATIO * dev and share is not None and share < OVERHEAD_MAX_GPU_BUSY:
        verdict = "overhead-bound"
    else:
        verdict = "balanced"
    from pista.hosttime import host_time
    from pista.memory import summary as memory_summary
    from pista.purpose import PURPOSES, time_by_purpose

    names = [str(p.get("name", f"device {p.get('id', '?')}")) for p in facts.trace.device_properties]
    by_purpose = {p.purpose: p.us_per_step for p in time_by_purpose(facts)}
    return Summary(
        self_cpu_total_us=cpu,
        self_device_total_us=dev,
        verdict=verdict,
        window_us=window / 1000.0,
        gpu_busy_us=busy / 1000.0,
        gpu_busy_share=share,
        kernel_busy_share=compute_share,
        steps=len(facts.steps),
        step_numbers=[s.number for s in facts.steps],
        devices=names,
        events=facts.trace.event_count,
        gpu_time_by_purpose={p: by_purpose.get(p, 0.0) for p in PURPOSES} if facts.has_gpu else {},
        host_time_by_region=host_time(facts),
        memory=memory_summary(facts),
        step_us=steps_of(facts).ns / 1000.0,
    )


@dataclass(eq=False)
class Context:
    """What a rule's `check` receives."""

    facts: Facts
    table: Table
    summary: Summary

    @property
    def trace(self) -> Trace:
        return self.facts.trace

    @property
    def step_count(self) -> int:
        """Steps the window holds (1 without steps: the window is the unit)."""
        return steps_of(self.facts).count

    @property
    def step_ns(self) -> float:
        return self.summary.step_us * 1000.0

    def per_step(self, total_ns: float) -> Impact:
        """The impact of saving total_ns over the whole window: per step, and its share of the step."""
        return steps_of(self.facts).per_step(total_ns)

    def step_impact(self, per_step_ns: float) -> Impact:
        """The impact of saving per_step_ns in every step."""
        return steps_of(self.facts).step_impact(per_step_ns)

    def once(self, total_ns: float) -> Impact:
        """The impact of a one-time cost of total_ns inside the window."""
        return steps_of(self.facts).once(total_ns)

    @property
    def busy_share(self) -> float:
        """The window's GPU busy share: GPU time saved shortens a step only where the GPU is the
        limit, and a host-bound step hides most of it (gpu/gpt2_conv1d, the layout twins)."""
        return steps_of(self.facts).busy


@dataclass(frozen=True)
class Steps:
    """What impacts are shared out by: the steps in the window (1 without steps) and the median
    step's ns (step_ns). A rule whose idle overhead-bound leaves out (`claimed_idle(facts)`) decides
    whether it fires from these, without a Context."""

    count: int
    ns: float
    busy: float  # the window's GPU busy share (1 without a GPU): see Context.busy_share
    window_ns: float = 1.0  # the window's wall time: what a one-time cost's share is of

    def per_step(self, total_ns: float) -> Impact:
        """The impact of saving total_ns over the whole window: per step, and its share of the step."""
        us = max(float(total_ns), 0.0) / self.count / 1000.0
        return Impact(us, min(1.0, us * 1000.0 / max(self.ns, 1.0)))

    def step_impact(self, per_step_ns: float) -> Impact:
        """The impact of saving per_step_ns in every step."""
        return self.per_step(per_step_ns * self.count)

    def once(self, total_ns: float) -> Impact:
        """The impact of a one-time cost of total_ns: all of it, and its share of the window."""
        ns = max(float(total_ns), 0.0)
        return Impact(ns / 1000.0, min(1.0, ns / max(self.window_ns, 1.0)), once=True)


@per_facts
def steps_of(facts: Facts) -> Steps:
    lo, hi = facts.window
    busy = _busy_ns(facts) / max(hi - lo, 1)
    return Steps(len(facts.steps) or 1, step_ns(facts), busy if facts.has_gpu and busy > 0 else 1.0,
                 float(max(hi - lo, 1)))


def _busy_ns(facts: Facts) -> int:
    """The busiest device's busy ns inside the window."""
    lo, hi = facts.window
    return max((b.clip(lo, hi).total for b in facts.gpu_busy.values()), default=0)


def analyze(source: Any, rules: list[str] | None = None, table: Table | None = None, replay: bool | None = None) -> Analysis:
    """Run the catalogue (or only `rules`) over a trace path, a Trace, Facts, or a finished
    pista.profile session; `table` is the one already rebuilt from the same Facts, if any. With `replay`
    (the default; PISTA_REPLAY=0 turns it off), the engine (pista.engine) sets the impacts of the findings
    that carry an edit by replaying the steps; without it, each rule's own estimate stands."""
    from pista.rules import catalogue

    facts = _facts_of(source)
    rows = len(facts.trace)
    phase_done(rows)
    if table is None:
        table = build_table(facts)
        phase_done(rows)
    summary = summarize(facts, table)
    phase_done(rows)
    ctx = Context(facts, table, summary)
    selected = [rule.id for rule in catalogue() if not rules or rule.id in rules]
    failed: list[str] = []
    by_rule = _check(ctx, selected, failed)
    from pista.engine import predict, settle

    findings = [f for rule_id in selected for f in by_rule[rule_id]]
    if replay if replay is not None else os.environ.get("PISTA_REPLAY", "1") != "0":
        findings = settle(facts, findings, ctx.step_ns)
    findings.sort(key=order_key)
    prediction = predict(facts)
    if prediction is not None:
        summary.replay_error = prediction.replay_error
        summary.replayed_step_us = prediction.step_ns / 1000.0
        summary.unprofiled_step_us = prediction.unprofiled_step_ns / 1000.0
    return Analysis(facts.trace.source, summary, findings, table, facts,
                    list(facts.trace.notices) + failed + coverage_notices(facts) + verdict_notices(summary)
                    + one_time_notices(findings, summary))


# One-time costs taking at least this share of the window: the table's totals and the verdict mostly show
# them, not the steady steps (gpu/eval_first_call: a cold region, 93% of the window; an expert review asked
# for it to be said up front).
ONE_TIME_NOTICE_SHARE = 0.5


def one_time_notices(findings: list[Finding], s: Summary) -> list[str]:
    """Whether one-time costs fill most of the window, so that the reading is mostly theirs."""
    once = [f for f in findings if f.impact.once]
    share = min(1.0, sum(f.impact.share for f in once))
    if share < ONE_TIME_NOTICE_SHARE:
        return []
    rules = ", ".join(dict.fromkeys(f.rule for f in once))
    return [f"{100 * share:.0f}% of this window is one-time cost ({rules}): the table, the totals and the verdict "
            "mostly show it; re-profile after a warm-up (torch.profiler.schedule with warmup steps) to read the "
            "steady steps"]


# A balanced verdict whose host takes at least this many times the GPU's time, the GPU computing less than
# COMPUTE_MIN_GPU_BUSY of the window: the profiler's ~2x on host time (PROFILER_HOST_INFLATION) can make a
# GPU-bound step look balanced (gpu/resnet50_train: 2.2x, the GPU idle 54% of the window as profiled, yet
# 6.22 ms a step unprofiled for ~5.4 ms of GPU work; seed_mm4096_compile: 2.5x at 37%, 182 µs a step
# unprofiled for 174 µs of GPU, REVIEW.md).
BALANCED_NOTICE_MIN_RATIO = 1.5


def verdict_notices(s: Summary) -> list[str]:
    """What the verdict leaves open: a balanced step's idle GPU may be the profiler's doing."""
    if s.verdict != "balanced" or not s.self_device_total_us or s.kernel_busy_share is None:
        return []
    ratio = s.self_cpu_total_us / s.self_device_total_us
    if ratio < BALANCED_NOTICE_MIN_RATIO or s.kernel_busy_share >= COMPUTE_MIN_GPU_BUSY:
        return []
    return [f"balanced: the host takes {ratio:.1f}x the GPU's time and the GPU computes {100 * s.kernel_busy_share:.0f}% "
            "of the window; the profiler about doubles host time, so without it the GPU is likely the limit: time a "
            "step unprofiled before acting on the idle GPU"]


def order_key(f: Finding) -> tuple[int, bool, bool, float, float, float]:
    """Findings in reading order: by severity, a steady cost before a one-time one of the same
    severity, a cause before a symptom (what is left once the causes are fixed), then by what fixing saves."""
    from pista.engine import is_symptom

    assert f.severity is not None
    return (-f.severity.rank, f.impact.once, is_symptom(f), -f.impact.rank_share, -f.impact.us, _first_ts(f))


# A share of zero-length complete events past which times mean little: a real trace has a few
# (instant-like ops), a hand-made one without "dur" has them all.
ZERO_DUR_NOTICE_SHARE = 0.5


# Longest over shortest step of a CPU-only trace past which the capture was contended: quiet captures
# on the project's CPU vary 1.0-1.3x (gpu/cpu_linear_host 1.17x, gpu/cpu_mlp 1.10x,
# gpu/python_loop_cpu 1.26x); gpu/cpu_linear, captured beside other work, 1.97x.
CPU_STEP_SPREAD = 1.5


def _cpu_step_spread(facts: Facts) -> tuple[float, float] | None:
    """(shortest, longest) step span in ns, on a CPU-only trace whose steps vary past CPU_STEP_SPREAD;
    None otherwise."""
    if facts.has_gpu or len(facts.steps) < 2:
        return None
    spans = [float(s.end - s.start) for s in facts.steps]
    lo, hi = min(spans), max(spans)
    return (lo, hi) if lo > 0 and hi / lo >= CPU_STEP_SPREAD else None


def _negative_self_times(facts: Facts) -> int:
    """Host events whose self time is negative because python_function frames and the events around
    them overlap without nesting (a record_function region entered inside a frame that returns before
    the region ends): the frames themselves, or events with a frame among their children."""
    trace = facts.trace
    host = facts.is_host | facts.is_overhead
    negative = host & (facts.self_time < 0)
    if not negative.any():
        return 0
    frames = trace.category_mask({"python_function"})
    has_frame_child = np.zeros(len(trace), dtype=bool)
    kids = np.flatnonzero(frames & (facts.parent >= 0))
    has_frame_child[facts.parent[kids]] = True
    return int((negative & (frames | has_frame_child)).sum())


# Runtime calls that put work on a device (a kernel, a graph, a copy or a memset), CUDA's and HIP's.
DEVICE_WORK_CALL = re.compile(r"LaunchKernel|LaunchCooperativeKernel|GraphLaunch|Memcpy|Memset")


def _no_gpu_work(facts: Facts) -> list[str]:
    """Why a trace has no device work: its launches' records were lost, or the model ran on the CPU beside a
    GPU (issue 35: both read 'the profiler ran without CUDA activities')."""
    trace = facts.trace
    devices = ", ".join(dict.fromkeys(str(p.get("name", "?")) for p in trace.device_properties))
    calls = np.flatnonzero(facts.is_launch)
    launching = [i for i in calls.tolist() if DEVICE_WORK_CALL.search(trace.event_name(i))]
    if launching:
        names = ", ".join(sorted({trace.event_name(i) for i in launching})[:3])
        return [f"{len(launching)} call(s) that put work on the GPU ({names}) but no kernel, copy or memset "
                "record: the GPU's records were lost (the profiler's activity buffers dropped or not flushed before "
                "the export); what follows reads the host alone. Export after the profiler has stopped (on_trace_ready "
                "or after the `with` block)"]
    if _foreign_accelerator(trace):
        return []  # it ran on an accelerator pista does not read (MTIA...): the reader's notice says so
    if calls.size or devices:
        where = f" ({devices})" if devices else ""
        return [f"the trace has a GPU{where}{f' and {calls.size} CUDA runtime call(s)' if calls.size else ''} but "
                "nothing ran on it: the model ran on the CPU (move it and its inputs with .to('cuda') if the GPU was "
                "meant), or the profiler ran without ProfilerActivity.CUDA"]
    return []


# PyTorch's reference CPU convolutions (im2col and a GEMM per image, ATen's ConvolutionMM2d): what a
# build without a oneDNN kernel for the convolution runs.
REFERENCE_CONV = re.compile(r"^aten::(_slow_conv2d_forward|_slow_conv2d_backward|slow_conv3d_forward|"
                            r"slow_conv_dilated[23]d|slow_conv_transpose[23]d)$")
# Share of a CPU-only window in them past which the notice speaks: marcalph/kernelforge's
# chrome_trace.json (resnet18 on a Mac's CPU) spends 76% in aten::_slow_conv2d_forward; kqwq/cs345's
# 11% beside 56% in aten::mkldnn_convolution (a few shapes falling back) stays silent.
REFERENCE_CONV_SHARE = 0.25


def _reference_conv(facts: Facts) -> list[str]:
    """A CPU-only window that mostly runs the reference convolution: say so, and which backend has a kernel."""
    trace = facts.trace
    names = [i for i, n in enumerate(trace.names) if REFERENCE_CONV.match(n)]
    if facts.has_gpu or not names:
        return []
    calls = facts.is_host & np.isin(trace.name, names)
    outer = calls.copy()
    inner = np.flatnonzero(calls & (facts.parent >= 0))
    outer[inner[calls[facts.parent[inner]]]] = False  # a backward's own forward call counts once
    start, end = facts.window
    spent = float(trace.dur[outer].sum())
    if end <= start or spent < REFERENCE_CONV_SHARE * (end - start):
        return []
    name = max({trace.names[int(trace.name[i])] for i in np.flatnonzero(outer)},
               key=lambda n: float(trace.dur[outer & (trace.name == trace.names.index(n))].sum()))
    return [f"{spent / (end - start):.0%} of the window ({spent / 1e6:.1f} ms in {int(outer.sum())} calls) is "
            f"{name}, PyTorch's reference CPU convolution (im2col and a GEMM per image): these convolutions ran "
            "without a oneDNN (mkldnn) kernel. On a Mac with Apple silicon, torch>=1.12 runs them on the GPU: "
            "move the model and its inputs to device='mps' (torch.backends.mps.is_available() says whether it can); "
            "on other CPUs a torch build with oneDNN (torch.backends.mkldnn.is_available()) runs them as "
            "aten::mkldnn_convolution"]


def _foreign_accelerator(trace: Trace) -> bool:
    from pista.trace.load import foreign_device_notice

    return foreign_device_notice(trace.categories, trace.cat) is not None


def coverage_notices(facts: Facts) -> list[str]:
    """What the profiler did not record, which changes how to read everything else."""
    trace = facts.trace
    notices = []
    if not facts.has_gpu:
        notices += _no_gpu_work(facts) + _reference_conv(facts)
    if facts.has_gpu and not facts.is_host.any():
        notices.append("no host (CPU) events, only GPU activity: Self CPU is 0 and the verdict cannot weigh the "
                       "host against the GPU; profile with ProfilerActivity.CPU as well")
    busy = busy_cpu(facts)
    if busy is not None:
        notices.append(f"the CPU was shared while this trace was taken: {busy.op} of {busy.mflop:.2g} MFLOP took "
                       f"{busy.ms:.3g} ms, and the median GEMM call {busy.factor:.0f}x what one slow core needs; other "
                       "processes held the cores (or torch ran more threads than the job's cores): the times here are "
                       "the machine's load, not the program's. Re-capture on a quiet machine, with torch.set_num_threads "
                       "at most the cores the job owns")
    spread = _cpu_step_spread(facts)
    if spread is not None:
        lo, hi = spread
        notices.append(f"the steps of this CPU-only trace vary {hi / lo:.1f}x ({lo / 1e6:.2f} ms to "
                       f"{hi / 1e6:.2f} ms): the machine was likely busy with other work; re-capture on a quiet "
                       "machine before trusting small differences")
    negative = _negative_self_times(facts)
    if negative:
        notices.append(f"{negative:,} event(s) have a negative self time: python_function frames and the events "
                       "around them overlap without nesting (torch nests them the same way); the table leaves "
                       "the frames out, `pista sql` shows those self times as they are")
    complete = facts.is_complete & (facts.is_host | facts.is_device_work)
    zero = int((complete & (trace.dur == 0)).sum())
    if zero and zero >= ZERO_DUR_NOTICE_SHARE * int(complete.sum()):
        notices.append(f"{zero:,} of {int(complete.sum()):,} complete events have a zero or missing duration: "
                       "self times, totals and the verdict undercount")
    return notices


def _check(ctx: Context, rule_ids: list[str], failed: list[str]) -> dict[str, list[Finding]]:
    """Each rule's findings. A rule that raises loses its own findings only: the others stand and `failed`
    gets a notice naming it (PISTA_STRICT_RULES=1, as the tests run, raises instead)."""
    from pista.errors import PistaError
    from pista.rules import get_rule

    strict = os.environ.get("PISTA_STRICT_RULES", "0") == "1"
    out: dict[str, list[Finding]] = {}
    for rule_id in rule_ids:
        try:
            out[rule_id] = get_rule(rule_id).check(ctx)
        except (PistaError, MemoryError):
            raise
        except Exception as exc:
            if strict:
                raise
            out[rule_id] = []
            failed.append(f"rule {rule_id} failed on this trace ({type(exc).__name__}: {str(exc)[:200]}) and is left "
                          "out; the other rules' findings stand. Please report it with the trace if you can")
        phase_done(len(ctx.facts.trace))
    return out


def _first_ts(finding: Finding) -> float:
    return min((e.ts_us for e in finding.evidence), default=float("inf"))


def _facts_of(source: Any) -> Facts:
    if isinstance(source, Facts):
        return source
    if isinstance(source, Trace):
        return derive(source)
    if isinstance(source, (str, os.PathLike)):
        from pista.trace.load import load_trace

        return derive(load_trace(source))
    trace_path = getattr(source, "trace_path", None)
    if trace_path is not None:
        return _facts_of(trace_path)
    raise TypeError(f"cannot analyze {type(source).__name__}: pass a trace path, a Trace or a pista.profile session")


def step_ns(facts: Facts) -> float:
    """The median step's wall time in ns (the window's without steps): what shares are of. On a
    GPU-bound trace the host's ProfilerStep spans end before their GPU work does (seed_mm4096_warm:
    160 µs host steps for 213 µs of GPU work each), so a step lasts at least its GPU busy time."""
    lo, hi = facts.window
    if not facts.steps:
        return float(max(hi - lo, 1))
    # per step: its host span or the busy time of the device work it launched, whichever is longer;
    # then the median, so one cold step does not lengthen the others (seed_mm64_cold)
    from pista.trace.facts import merge_intervals

    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work & (facts.event_step >= 0))
    work = work[np.argsort(facts.event_step[work], kind="stable")]
    bounds = np.searchsorted(facts.event_step[work], np.arange(len(facts.steps) + 1))
    lengths = []
    for k, s in enumerate(facts.steps):
        mine = work[bounds[k]:bounds[k + 1]]
        busy = merge_intervals(trace.ts[mine], trace.ts[mine] + trace.dur[mine]).total if mine.size else 0
        lengths.append(max(s.dur, busy))
    return float(np.median(lengths))


def top_indices(values: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values under mask, largest first (evidence pickers use this)."""
    idx = np.flatnonzero(mask)
    if idx.size <= k:
        return idx[np.argsort(-values[idx], kind="stable")]
    part = idx[np.argpartition(-values[idx], k)[:k]]
    return part[np.argsort(-values[part], kind="stable")]
