"""`analyze()`: the one entry point that runs the catalogue over a trace, and what it gives back: an
`Analysis` (the summary, the findings in reading order, the table, the notices). Rules receive a
`Context`; impacts are shared out by `Steps` (both pista.context's, below the rules). The top of the
analysis: it runs the catalogue (pista.rules) and the engine (pista.engine) over the facts; renderers read
the Analysis it gives back.

The data a rule produces is pista.finding's, the grading and ordering pista.policy's, the JSON form
pista.schema's, the notices' text pista.notices'. A rule that raises is left out with a notice
(pista.isolation).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from pista.allocator import phase_done
from pista.context import Context, Summary, steps_of, window_busy_ns
from pista.engine import predict, settle
from pista.finding import Finding, Record
from pista.hosttime import host_time
from pista.i18n import note_text
from pista.isolation import RuleFailed, isolated
from pista.memory import summary as memory_summary
from pista.notices import coverage_notices, one_time_notices, verdict_notices
from pista.policy import input_verdict, one_time_share, order_key, start_up_verdict, top_fix, verdict_of
from pista.purpose import PURPOSES, time_by_purpose
from pista.query import cpu_activity_missing
from pista.rules import catalogue, get_rule
from pista.schema import analysis_dict
from pista.table import Table, build_table
from pista.trace.facts import Facts, derive
from pista.trace.model import Trace


@dataclass(eq=False)
class Analysis:
    source: str
    summary: Summary
    findings: list[Finding]
    table: Table
    facts: Facts
    notices: list[str]
    # the rules that raised on this trace (pista.isolation); each is also one of `typed_notices`
    failures: list[RuleFailed] = field(default_factory=list)
    # pista's own notices as typed records (pista.notices, pista.isolation): each is also one of the notices, in
    # English until pista.i18n.localize writes it in the reading's language (the reader's are English strings)
    typed_notices: list[Record] = field(default_factory=list)

    def finding(self, rule: str) -> Finding | None:
        return next((f for f in self.findings if f.rule == rule), None)

    def __repr__(self) -> str:
        # one line, not the dataclass's dump of every column of the trace (a notebook's text/plain, a REPL)
        top = self.top_fix
        return (f"<pista Analysis of {self.source}: {self.summary.verdict}, {len(self.findings)} finding(s)"
                + (f"; start here: {top.rule}" if top is not None else "") + ">")

    def _repr_html_(self) -> str:
        """Jupyter: the report's summary and findings, inline (pista.render.notebook)."""
        # start-up: the notebook's renderer (the HTML report's parts) only where an Analysis is displayed
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
    busy = window_busy_ns(facts)
    compute = max((b.clip(lo, hi).total for b in facts.kernel_busy.values()), default=0)
    cpu, dev = table.self_cpu_total_us, table.self_device_total_us
    share = busy / window if facts.has_gpu else None
    compute_share = compute / window if facts.has_gpu else None
    verdict = verdict_of(facts.has_gpu, cpu, dev, share, compute_share, host_ops=not cpu_activity_missing(facts))
    by_region = host_time(facts)
    input_share = _input_share(by_region)
    names = [str(p.get("name", f"device {p.get('id', '?')}")) for p in facts.trace.device_properties]
    by_purpose = {p.purpose: p.us_per_step for p in time_by_purpose(facts)}
    return Summary(
        self_cpu_total_us=cpu,
        self_device_total_us=dev,
        verdict=input_verdict(verdict, input_share),
        window_us=window / 1000.0,
        gpu_busy_us=busy / 1000.0,
        gpu_busy_share=share,
        kernel_busy_share=compute_share,
        steps=len(facts.steps),
        step_numbers=[s.number for s in facts.steps],
        devices=names,
        events=facts.trace.event_count,
        gpu_time_by_purpose={p: by_purpose.get(p, 0.0) for p in PURPOSES} if facts.has_gpu else {},
        host_time_by_region=by_region,
        memory=memory_summary(facts),
        step_us=steps_of(facts).ns / 1000.0,
        host_bound=verdict == "overhead-bound",
        input_share=input_share,
    )


def _input_share(by_region: dict[str, dict[str, float]]) -> float:
    """The share of its time the thread that waits longest for data spends in data regions (pista.hosttime's
    regions, each a mean per step: against their sum, the thread's mean step, not the median step: gpu/compile_warmup
    has 645 µs of data a step beside a 512 µs median step and an 833 ms mean one, its compile)."""
    thread = max(by_region.values(), key=lambda regions: regions.get("data", 0.0), default={})
    total = sum(thread.values())
    return thread.get("data", 0.0) / total if total > 0 else 0.0


def analyze(source: Any, rules: list[str] | None = None, table: Table | None = None, replay: bool | None = None) -> Analysis:
    """Run the catalogue (or only `rules`) over a trace path, a Trace, Facts, or a finished
    pista.profile session; `table` is the one already rebuilt from the same Facts, if any. With `replay`
    (the default; PISTA_REPLAY=0 turns it off), the engine (pista.engine) sets the impacts of the findings
    that carry an edit by replaying the steps; without it, each rule's own estimate stands."""
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
        findings = settle(facts, findings, ctx.step_ns, failures)
    findings.sort(key=order_key)
    summary.verdict = start_up_verdict(summary.verdict, one_time_share(findings))
    _predict(facts, summary)
    typed = [*failures, *coverage_notices(facts), *verdict_notices(summary, host_ops=not cpu_activity_missing(facts)),
             *one_time_notices(findings, summary)]
    return Analysis(facts.trace.source, summary, findings, table, facts,
                    list(facts.trace.notices) + [note_text(n, "en") for n in typed], failures, typed)


def _check(ctx: Context, rule_ids: list[str], failures: list[RuleFailed]) -> dict[str, list[Finding]]:
    """Each rule's findings. A rule that raises loses its own findings only: the others stand and `failures`
    names it (pista.isolation)."""
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


def _predict(facts: Facts, summary: Summary) -> None:
    """The engine's replay of the steps, as profiled and without the profiler, into the summary."""
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
        # start-up: a Trace or Facts handed in (the CLI, a notebook) needs no reader
        from pista.trace.load import load_trace

        return derive(load_trace(source))
    trace_path = getattr(source, "trace_path", None)
    if trace_path is not None:
        return _facts_of(trace_path)
    raise TypeError(f"cannot analyze {type(source).__name__}: pass a trace path, a Trace or a pista.profile session")


