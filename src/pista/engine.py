"""The engine: it owns every claim on the step's time (issue 33).

Rules detect; a finding may carry an `Edit` (pista.timeline), what its fix does to the timeline. The
engine replays the steps with the edits applied and sets each finding's impact to the step time it
saves, in one documented order, so no time is counted twice:

1. **Causes** (findings with an edit, from rules that are not symptoms), biggest saving alone first:
   each is credited with what it saves on top of the causes before it (the first with all it saves).
2. **Symptoms** (rules with `SYMPTOM = True`: overhead-bound, launch-bound, many-calls, gpu-idle,
   compile-overhead): what their fix saves once every cause is fixed, in the same order.
3. **The rest** (rules that give no edit yet) keep their own estimate, cut to what the step has left,
   biggest first; one-time costs (`once`) are of the window, not the step, and are left as they are.

A finding whose edit saves nothing is dropped: its fix would not show on the user's timer; so is one that
saves less than RESTATED_SHARE of what it saves alone once the fixes before it are applied (it restates
their time). Except where its rule says `KEEP_OFF_PATH = True` (a faster dtype: fp32-gemm) and its own estimate
frees at least OFF_PATH_MIN_SHARE of the step in device time: then the device work it shortens is off the
critical path as profiled (the host sets the step's pace), and the finding stays as information at no step
saving, its record told so (`off_critical_path()`, which may still drop it: None), for the step gains it once
the host keeps the GPU busy. A rule may say per finding whether it is a symptom or a cause (`Finding.symptom`: gpu-idle's
idle under a named region is a cause, under none a symptom).

Symptoms are how the step is built, and their remedy is structural (graph the step, batch more): they are
warnings at most, and information where no cause is above information (`quiet_symptoms`): a healthy small
model is host-bound on an H100 and is told so quietly, with what graphing it would save.

Each replayed impact also carries the saving predicted without the profiler: the same replay after the
profiler's own cost per recorded host event is taken out (PROFILER_NS), which is what a user timing the
step will measure; it is the figure that ranks the findings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from pista.finding import Finding, Impact
from pista.isolation import RuleFailed, isolated
from pista.policy import Severity, is_symptom
from pista.timeline import NO_EDIT, Edit, Replay, Timeline, timeline
from pista.trace.facts import Facts, Intervals, merge_intervals, per_facts

# How much longer the host takes to dispatch ops under the profiler with record_shapes, and with with_stack
# as well (the trace has python_function events): fitted on the savings suite's 56 traces (tests/fixtures/
# savings/h100, both twins of 28 pairs, the recompile pairs left out) against their unprofiled median steps.
# Without stacks (26 traces) 1.5 / 1.7 / 2.0 give a median error of the replayed unprofiled step of 5.3 /
# 7.7 / 17.8%; with stacks (30) 1.7 / 2.0 / 2.3 give 15.1 / 9.7 / 13.6%. A fixed cost per recorded event
# fitted worse (12-28%).
PROFILER_DISPATCH_INFLATION = 1.5
PROFILER_STACK_DISPATCH_INFLATION = 2.0
# Host time counts as dispatch (inflated) inside ops and in gaps between ops up to twice this long (ns):
# Python between eager ops is 5-30 µs on the H200 fixtures; a long gap (NumPy, a sleep, I/O) runs as fast
# with the profiler as without.
DISPATCH_GAP_NS = 15_000
# An op holding this much host time itself (ns) does work, not dispatch: its time is not inflated (the
# profiler's cost is per call, some µs; the savings suite's host ops run 5-300 µs).
LONG_HOST_OP_NS = 1_000_000
# A replayed saving under this share of the step is no saving: the replay's own noise (queue carry across
# step boundaries) is about this size on the fixtures.
MIN_SAVING_SHARE = 0.001
# A finding whose fix saves less than this share of what it saves alone, once the fixes credited before it
# are applied, restates their time (savings/h100/numpy_preprocess: host-work's 13 ms stretch is gpu-idle's
# region, 0.03 ms left): one fact, one finding.
RESTATED_SHARE = 0.05
# A finding of a KEEP_OFF_PATH rule whose replay saves nothing stays, as information, where its own estimate frees
# at least this share of the step in device time: review 4 counted fp32-gemm's silence as a silence on
# a4000_sevit_warm (fp32 SIMT SGEMMs 27% of the window, the GPU idle 51% waiting for the host, 23% by the rule's
# own estimate) and hta_v100_dfidx (volta_sgemm 23% of the step while the backward issues 374 all-reduces one by
# one, the GPU idle 120 ms of each step; 20% by its estimate). REVIEW.md's bar for a silence: 10% of the step.
OFF_PATH_MIN_SHARE = 0.10


def quiet_symptoms(findings: list[Finding]) -> list[Finding]:
    """A symptom says how the step is built (host-bound, launch-bound, GPU idle), and its remedy is a
    structural one (graph the step, batch more): it is at most a warning, and at most info where the reading
    names no cause above info. A small model trained well is host-bound on an H100 (savings/h100/
    healthy_gpt_bf16: 3.4 ms of GPU work in a 6.4 ms unprofiled step): that is worth knowing, with what
    graphing would save, but it is not a defect (issue 33: healthy programs quiet)."""
    cap = Severity.WARNING if any(_loud_cause(f) for f in findings) else Severity.INFO
    return [dataclasses.replace(f, severity=cap) if _above(f, cap) else f for f in findings]


def _loud_cause(f: Finding) -> bool:
    """A cause above info that recurs (not a one-time cost)."""
    return not is_symptom(f) and f.severity != Severity.INFO and not f.impact.once


def _above(f: Finding, cap: Severity) -> bool:
    """A symptom graded above the cap, by its impact (a severity its rule set stays)."""
    return is_symptom(f) and f.severity is not None and f.severity.rank > cap.rank and not f.severity_fixed


@per_facts
def profiler_edit(facts: Facts) -> Edit:
    """Take out the profiler's own host cost: dispatch time (ops, and the short gaps between them) divided
    by PROFILER_DISPATCH_INFLATION (PROFILER_STACK_DISPATCH_INFLATION with stacks); waits are replayed,
    never scaled."""
    trace = facts.trace
    ops = np.flatnonzero(facts.is_host & facts.is_complete & trace.category_mask({"cpu_op", "cuda_runtime",
                                                                                  "cuda_driver"}))
    if ops.size == 0:
        return Edit("without the profiler")
    spans = merge_intervals(trace.ts[ops] - DISPATCH_GAP_NS, trace.ts[ops] + trace.dur[ops] + DISPATCH_GAP_NS)
    # an op that works on the host for long (a CPU kernel, torch.randn on the CPU: solangii_default's 363 ms
    # normal_ calls) runs as fast with the profiler as without: its time is not dispatch
    long = ops[(trace.dur[ops] >= LONG_HOST_OP_NS) & (facts.self_time[ops] >= LONG_HOST_OP_NS)]
    if long.size:
        spans = spans.subtract(merge_intervals(trace.ts[long], trace.ts[long] + trace.dur[long]))
    python = trace.category_id("python_function")
    stacks = python >= 0 and bool((trace.cat == python).any())
    inflation = PROFILER_STACK_DISPATCH_INFLATION if stacks else PROFILER_DISPATCH_INFLATION
    return Edit("without the profiler", host_scale_spans=((spans, 1.0 / inflation),))


@dataclasses.dataclass(frozen=True)
class Prediction:
    """The replayed step, per step (ns): as profiled and without the profiler."""

    step_ns: float
    unprofiled_step_ns: float
    replay_error: float


@per_facts
def unprofiled(facts: Facts) -> Replay | None:
    """The steps replayed without the profiler's cost (None without a timeline)."""
    tl = timeline(facts)
    return None if tl is None else tl.replay(profiler_edit(facts))


def _replayed_steps(facts: Facts) -> tuple[Timeline, Replay] | None:
    """The timeline and its steps replayed without the profiler; None without a timeline or with no step in it."""
    tl, clean = timeline(facts), unprofiled(facts)
    if tl is None or clean is None or not tl.baseline.ends.size:
        return None
    return tl, clean


def predict(facts: Facts) -> Prediction | None:
    replayed = _replayed_steps(facts)
    if replayed is None:
        return None
    tl, clean = replayed
    return Prediction(tl.baseline.median_ns, clean.median_ns, tl.error)


def settle(facts: Facts, findings: Sequence[Finding], step_ns: float,
           failures: list[RuleFailed] | None = None) -> list[Finding]:
    """The findings with the engine's impacts (see the module docstring); those that save nothing left out.
    A finding whose edit cannot be replayed (a bug in its rule) keeps the rule's own estimate, and `failures`
    names the rule (pista.isolation); without `failures` the error goes through."""
    replayed = _replayed_steps(facts)
    replayable = [f for f in findings if f.edit is not None and not f.impact.once]
    if replayed is None or not replayable:
        return _finished(list(findings), step_ns, {})
    tl, clean = replayed
    ctx = _Credit(tl, profiler_edit(facts), tl.baseline.median_ns or 1.0, clean.median_ns or 1.0, {}, {},
                  observed_step=step_ns, failures=failures)
    ctx.replay(facts, replayable)
    return _finished(ctx.kept(findings, replayable), step_ns, ctx.settled, ctx.edits)


def _finished(findings: list[Finding], step_ns: float, settled: dict[int, Impact],
              edits: dict[int, Edit] | None = None) -> list[Finding]:
    """The settled impacts in place, the rest budgeted, symptoms quieted, records told what is printed."""
    return printed(quiet_symptoms(_budget(findings, step_ns, settled, edits)))


def _unreplayed(f: Finding) -> Finding:
    """A finding whose edit could not be replayed: one without an edit, with the rule's own estimate."""
    return dataclasses.replace(f, edit=None, severity=_rule_severity(f))


def printed(findings: list[Finding]) -> list[Finding]:
    """The findings, each record that points at other rules (a `with_printed(rules)` method: overhead-bound's
    'left to other findings') told which rules have a finding in the reading, so that its text names no
    finding that is not printed (issue 35: 1.17 ms 'left to' cold-start, dead-window and lazy-loading, none
    of them printed)."""
    rules = frozenset(f.rule for f in findings)
    return [dataclasses.replace(f, record=f.record.with_printed(rules)) if hasattr(f.record, "with_printed") else f
            for f in findings]


@dataclasses.dataclass
class _Credit:
    """What one settlement shares: the timeline, the profiler's edit, the median step as profiled and without
    the profiler (what shares are of, whatever is applied before), the impacts settled so far and the edits
    replayed for them (a symptom's, outside the causes' host time)."""

    tl: Timeline
    prof: Edit
    step: float
    clean_step: float
    settled: dict[int, Impact]
    edits: dict[int, Edit]
    # the median step as the trace shows it: no fix saves more than the step (a replay far off its trace, as
    # foreign/hta_negq_rank0's 62% with the host 165 ms ahead of the GPU, replayed 406 ms steps for 216 ms ones)
    observed_step: float = float("inf")
    failures: list[RuleFailed] | None = None
    failed: set[int] = dataclasses.field(default_factory=set)  # findings whose edit could not be replayed

    def replay(self, facts: Facts, replayable: list[Finding]) -> None:
        """Credit the causes, then the symptoms with what the causes leave."""
        causes = [f for f in replayable if not is_symptom(f)]
        symptoms = [f for f in replayable if is_symptom(f)]
        applied = self.credit([(f, f.edit) for f in causes], NO_EDIT)
        # a symptom claims only host time no cause's fix has changed (an unfused optimizer's launches are not
        # launch-bound's as well)
        taken = applied.footprint(facts)
        self.credit(self.outside(symptoms, facts, taken), applied)

    def kept(self, findings: Sequence[Finding], replayable: list[Finding]) -> list[Finding]:
        """The findings left once replayed: those not replayed, those whose fix saves something, (without
        their edit) those whose edit could not be replayed, and those kept off the critical path (_off_path)."""
        replayed = {id(g) for g in replayable} - self.failed
        out = []
        for f in findings:
            if id(f) in self.failed:
                out.append(_unreplayed(f))
            elif id(f) not in replayed or id(f) in self.settled:
                out.append(f)
            elif (record := _off_path(f)) is not None:
                out.append(dataclasses.replace(f, record=record, impact=Impact(0.0, 0.0), edit=None, severity=None,
                                               severity_fixed=False))
        return out

    def outside(self, symptoms: list[Finding], facts: Facts, taken: Intervals) -> list[tuple[Finding, Edit]]:
        """Each symptom with its edit outside the host time `taken` by the causes' fixes."""
        group = []
        for f in symptoms:
            with isolated(f.rule, "replay", self.failures):
                group.append((f, f.edit.outside(facts, taken)))
                continue  # past here only where it raised
            self.failed.add(id(f))
        return group

    def _alone(self, group: list[tuple[Finding, Edit]], applied: Edit, base: Replay) -> dict[int, float]:
        """What each finding's edit saves on top of what is applied; a finding whose edit cannot be replayed
        is left out of the result (and noted in `failed`)."""
        alone = {}
        for f, e in group:
            with isolated(f.rule, "replay", self.failures):
                alone[id(f)] = base.median_ns - self.tl.replay(applied + e).median_ns
                continue  # past here only where it raised
            self.failed.add(id(f))
        return alone

    def credit(self, group: list[tuple[Finding, Edit]], applied: Edit) -> Edit:
        """Credit each finding of the group with its saving on top of what is applied, biggest alone first;
        what is applied after the group."""
        tl, prof = self.tl, self.prof
        base, clean_base = tl.replay(applied), tl.replay(prof + applied)
        alone = self._alone(group, applied, base)
        group = [g for g in group if id(g[0]) in alone]
        clean_alone = {id(f): clean_base.median_ns - tl.replay(prof + applied + e).median_ns for f, e in group}
        for f, e in sorted(group, key=lambda g: -alone[id(g[0])]):
            now = applied + e
            after, clean_after = tl.replay(now), tl.replay(prof + now)
            saved = min(base.median_ns - after.median_ns, e.most_ns)
            clean_saved = min(clean_base.median_ns - clean_after.median_ns, e.most_ns)
            if self._saves_nothing(f, saved, clean_saved):
                continue
            if _restated(saved, alone[id(f)]) and _restated(clean_saved, clean_alone[id(f)]):
                continue  # what the fixes before it already save: the same time, said again
            self.settled[id(f)] = self._impact(saved, clean_saved, alone[id(f)], clean_alone[id(f)])
            self.edits[id(f)] = e
            applied, base, clean_base = now, after, clean_after
        return applied

    def _saves_nothing(self, f: Finding, saved: float, clean_saved: float) -> bool:
        """Whether a saving (ns, as profiled and without the profiler) is none: under MIN_SAVING_SHARE of the
        step both ways, or a symptom's that is the profiler's own (kineto_resnet50_w4_2021: launch-bound 8.5 ms as
        profiled, none without the profiler)."""
        return clean_saved <= MIN_SAVING_SHARE * self.clean_step and (saved <= MIN_SAVING_SHARE * self.step
                                                                       or is_symptom(f))

    def _impact(self, saved: float, clean_saved: float, alone: float, clean_alone: float) -> Impact:
        """The impact credited for a saving (ns, as profiled and without the profiler; `alone`, `clean_alone`: its
        edit's alone, both ways), as profiled no more than the step (nor the step the trace shows)."""
        cap = min(self.step, self.observed_step)
        return Impact(
            min(max(saved, 0.0), cap) / 1000.0, min(1.0, max(saved, 0.0) / self.step), replayed=True,
            alone_us=alone / 1000.0, unprofiled_us=min(max(clean_saved, 0.0), self.clean_step) / 1000.0,
            unprofiled_share=min(1.0, max(clean_saved, 0.0) / self.clean_step),
            unprofiled_alone_share=min(1.0, max(clean_alone, 0.0) / self.clean_step))


def _off_path(f: Finding) -> Any:
    """The record of a finding whose replay saves nothing, told so, where it stays (KEEP_OFF_PATH,
    OFF_PATH_MIN_SHARE, and its record's `off_critical_path()` keeps it); None where it goes."""
    # start-up: `pista whatif` replays without the catalogue (rules loads every rule's module)
    from pista.rules import get_rule

    if not getattr(get_rule(f.rule).module, "KEEP_OFF_PATH", False) or f.impact.share < OFF_PATH_MIN_SHARE:
        return None
    return f.record.off_critical_path()


def _restated(saved: float, alone: float) -> bool:
    """Whether a fix saves, on top of those credited before it, under RESTATED_SHARE of what it saves alone.
    Judged as profiled and without the profiler both: a step the profiled host bounds once one GPU fix is in
    leaves a second GPU fix nothing as profiled, yet it saves without the profiler (foreign/hta_ns_resolution:
    channels-last, then fp16 GEMMs on a V100 ResNet, 20 ms a step)."""
    return alone > 0 and max(saved, 0.0) < RESTATED_SHARE * alone


def _budget(findings: list[Finding], step_ns: float, settled: dict[int, Impact],
            edits: dict[int, Edit] | None = None) -> list[Finding]:
    """Replayed impacts (with the edits replayed for them) in place; the rest of the steady impacts cut to what
    the step has left."""
    cut = _cut_to_what_is_left(findings, step_ns, settled)
    out = []
    for f in findings:
        impact = settled.get(id(f)) or cut.get(id(f))
        if impact is None:
            out.append(f)
            continue
        if id(f) in cut and impact.share < MIN_SAVING_SHARE and is_symptom(f):
            continue  # a symptom the causes leave nothing to (kineto_resnet50_w4_2021: launch-bound at 0 µs)
        out.append(_with_impact(f, impact, (edits or {}).get(id(f), f.edit)))
    return out


def _with_impact(f: Finding, impact: Impact, edit: Edit | None) -> Finding:
    """The finding with its new impact and the edit replayed for it."""
    return dataclasses.replace(f, impact=impact, severity=_rule_severity(f), edit=edit)


def _rule_severity(f: Finding) -> Severity | None:
    """A severity the rule set stays; any other (None) follows the finding's impact (Finding.__post_init__)."""
    return f.severity if f.severity_fixed else None


def _cut_to_what_is_left(findings: list[Finding], step_ns: float, settled: dict[int, Impact]) -> dict[int, Impact]:
    """The steady impacts not settled that exceed what the step has left once the settled ones are taken,
    biggest first, cut to it."""
    left = 1.0 - max(sum(i.share for i in settled.values()), sum(i.rank_share for i in settled.values()), 0.0)
    legacy = sorted((f for f in findings if id(f) not in settled and not f.impact.once), key=lambda f: -f.impact.share)
    cut: dict[int, Impact] = {}
    for f in legacy:
        share = min(f.impact.share, max(left, 0.0))
        left -= share
        if share < f.impact.share:
            cut[id(f)] = Impact(share * step_ns / 1000.0, share)
    return cut
