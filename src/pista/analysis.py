"""`analyze()`: the one entry point that runs the catalogue over a trace, and what it gives back: an
`Analysis` (the summary, the findings in reading order, the table, the notices). Rules receive a
`Context`; impacts are shared out by `Steps`.

The data a rule produces is pista.finding's, the grading and ordering pista.policy's, the JSON form
pista.schema's, the notices' text pista.notices'. A rule that raises is left out with a notice
(pista.isolation).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pista.allocator import phase_done
from pista.finding import Finding, Impact
from pista.i18n import note_text
from pista.isolation import RuleFailed, isolated
from pista.memory import summary as memory_summary
from pista.notices import coverage_notices, one_time_notices, verdict_notices
from pista.policy import order_key, top_fix, verdict_of
from pista.query import cpu_activity_missing
from pista.schema import analysis_dict
from pista.table import Table, build_table
from pista.trace.facts import Facts, derive, merge_intervals, per_facts
from pista.trace.model import Trace


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



@dataclass(eq=False)
class Analysis:
    source: str
    summary: Summary
    findings: list[Finding]
    table: Table
    facts: Facts
    notices: list[str]
    # the rules that raised on this trace (pista.isolation); each is also one of the notices, in English until
    # pista.i18n.localize writes it in the reading's language
    failures: list[RuleFailed] = field(default_factory=list)

    def finding(self, rule: str) -> Finding | None:
        return next((f for f in self.findings if f.rule == rule), None)

    def __repr__(self) -> str:
        # one line, not the dataclass's dump of every column of the trace (a notebook's text/plain, a REPL)
        top = self.top_fix
        return (f"<pista Analysis of {self.source}: {self.summary.verdict}, {len(self.findings)} finding(s)"
                + (f"; start here: {top.rule}" if top is not None else "") + ">")

    def _repr_html_(self) -> str:
        """Jupyter: the report's summary and findings, inline (pista.render.notebook)."""
        # cycle: render.notebook imports analysis
        from pista.render.notebook import render_html

        return render_html(self)

    @property
    def rules_fired(self) -> list[str]:
        return [f.rule for f in self.findings]

    @property
    def top_fix(self) -> Finding | None:
        """The finding to start with (pista.policy.top_fix)."""
        return top_fix(self.findings)

    def to_dict(self, row_limit: int = 25) -> dict[str, Any]:
        """As `pista analyze --format json` writes it (pista.schema)."""
        return analysis_dict(self, row_limit)


def summarize(facts: Facts, table: Table) -> Summary:
    lo, hi = facts.window
    window = max(hi - lo, 1)
    busy = _busy_ns(facts)
    compute = max((b.clip(lo, hi).total for b in facts.kernel_busy.values()), default=0)
    cpu, dev = table.self_cpu_total_us, table.self_device_total_us
    share = busy / window if facts.has_gpu else None
    compute_share = compute / window if facts.has_gpu else None
    verdict = verdict_of(facts.has_gpu, cpu, dev, share, compute_share, host_ops=not cpu_activity_missing(facts))
    # cycle: hosttime and purpose import rules._common, which imports findings, which imports analysis
    from pista.hosttime import host_time
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
    # cycle: rules imports findings, which imports analysis
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
    failures: list[RuleFailed] = []
    by_rule = _check(ctx, selected, failures)
    findings = [f for rule_id in selected for f in by_rule[rule_id]]
    if replay if replay is not None else os.environ.get("PISTA_REPLAY", "1") != "0":
        # start-up: `pista rules` and `pista explain` load analysis, not the engine
        from pista.engine import settle

        findings = settle(facts, findings, ctx.step_ns, failures)
    findings.sort(key=order_key)
    _predict(facts, summary)
    return Analysis(facts.trace.source, summary, findings, table, facts,
                    list(facts.trace.notices) + _failure_notices(failures) + coverage_notices(facts)
                    + verdict_notices(summary, host_ops=not cpu_activity_missing(facts))
                    + one_time_notices(findings, summary), failures)


def _check(ctx: Context, rule_ids: list[str], failures: list[RuleFailed]) -> dict[str, list[Finding]]:
    """Each rule's findings. A rule that raises loses its own findings only: the others stand and `failures`
    names it (pista.isolation)."""
    # cycle: rules imports findings, which imports analysis
    from pista.rules import get_rule

    out: dict[str, list[Finding]] = {}
    for rule_id in rule_ids:
        rule = get_rule(rule_id)
        out[rule_id] = []
        with isolated(rule_id, "check", failures):
            out[rule_id] = rule.check(ctx)
        for f in out[rule_id]:
            if f.symptom is None:  # the rule's say (pista.policy.is_symptom reads the finding's alone)
                f.symptom = rule.symptom
        phase_done(len(ctx.facts.trace))
    return out


def _failure_notices(failures: list[RuleFailed]) -> list[str]:
    """The rules that failed, as notices in English (pista.i18n.localize writes them in other languages)."""
    return [note_text(f, "en") for f in failures]


def _predict(facts: Facts, summary: Summary) -> None:
    """The engine's replay of the steps, as profiled and without the profiler, into the summary."""
    # start-up: `pista rules` and `pista explain` load analysis, not the engine
    from pista.engine import predict

    prediction = predict(facts)
    if prediction is not None:
        summary.replay_error = prediction.replay_error
        summary.replayed_step_us = prediction.step_ns / 1000.0
        summary.unprofiled_step_us = prediction.unprofiled_step_ns / 1000.0


def _facts_of(source: Any) -> Facts:
    if isinstance(source, Facts):
        return source
    if isinstance(source, Trace):
        return derive(source)
    if isinstance(source, (str, os.PathLike)):
        # start-up: `pista rules` and `pista explain` load analysis, not the reader
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


