"""The anomaly-mode rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
anomaly-mode`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/anomaly_mode.ftl."""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Finding, Record
from pista.opargs import SEQ_NONE, SEQ_ODD, sequence_numbers
from pista.query import AUTOGRAD_NODE, name_mask, nearest_ancestor, pattern_mask
from pista.rules._anomaly import SIGNATURE, check_ops
from pista.rules._common import evidence, us
from pista.rules._idle import idle_under
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, merge_intervals

ID = "anomaly-mode"
MIN_STEP_SHARE = 0.01  # REVIEW.md: under 1% of the step is noise
EVIDENCE_CHECKS = 3  # one node's check ops; presentation
# Under set_detect_anomaly(True) (not only detect_anomaly() around backward()) the forward records a Python
# traceback in every op that builds an autograd node: on a GPU trace, where an op's self time is its
# dispatch, those ops keep a median self time of at least this many ns (savings/h100/anomaly_global:
# 59 µs, against 4.1 µs in its fixed twin and 4.9 µs in anomaly_ctx, whose forward runs outside anomaly
# mode; gpt2_conv1d and series_mlp_eager 8.0 and 6.5 µs).
FORWARD_TRACEBACK_SELF_NS = 30_000
# ... and off, their self time keeps this share (the fixed twin's 4.1 µs of 59).
TRACEBACK_SELF_KEEP = 0.1


class AnomalyMode(Record):
    steps: int
    nodes_checked_per_step: float  # backward nodes whose outputs were checked
    gradients_checked_per_step: float  # their outputs checked (one isnan each: a conv's input, weight, bias)
    checks_us_per_step: float  # host time of the check ops
    idle_us_per_step: float | None  # the GPU idle under them (None without a GPU)
    forward_tracebacks: bool = False  # the forward records a traceback per node too (set_detect_anomaly(True))


class CheckNote(Record):
    """Note on one check op under a backward node."""

    node: str


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    checks = check_ops(facts)
    if checks.size == 0:
        return []
    trace = facts.trace
    host_ns = float(trace.dur[checks].sum())
    idle = idle_under(facts, checks).total if facts.has_gpu else None
    impact = ctx.per_step(host_ns if idle is None else idle)
    if impact.share < MIN_STEP_SHARE:
        return []
    steps = ctx.step_count
    nodes = np.unique(facts.parent[checks])
    gradients = int(name_mask(facts, {SIGNATURE})[checks].sum())
    forward = _traceback_self(facts) if facts.has_gpu else None
    record = AnomalyMode(steps=steps, nodes_checked_per_step=nodes.size / steps,
                         gradients_checked_per_step=gradients / steps,
                         checks_us_per_step=us(host_ns) / steps,
                         idle_us_per_step=None if idle is None else us(idle) / steps,
                         forward_tracebacks=forward is not None)
    # the checks of the node they cost most under (a conv's three gradients, not the loss's one)
    ids, inverse = np.unique(facts.parent[checks], return_inverse=True)
    costliest = int(ids[np.argmax(np.bincount(inverse, weights=trace.dur[checks]))])
    shown = checks[facts.parent[checks] == costliest][:EVIDENCE_CHECKS]
    node = AUTOGRAD_NODE.sub("", trace.event_name(costliest))
    ev = [evidence(facts, int(i), CheckNote(node)) for i in shown.tolist()]
    spans = ((forward, TRACEBACK_SELF_KEEP),) if forward is not None else ()
    return [Finding(ID, record, impact, ev,
                    edit=Edit("anomaly checks gone", remove=checks.astype("int64"), host_scale_spans=spans))]


def _traceback_self(facts: Facts) -> Intervals | None:
    """The self time of the forward's node-building ops, where their median says anomaly mode records a
    traceback in each (FORWARD_TRACEBACK_SELF_NS); None where it does not."""

    trace = facts.trace
    ops = np.flatnonzero(facts.is_host & trace.category_mask({"cpu_op"}) & (facts.event_step >= 0 if facts.steps
                                                                           else facts.is_host))
    ops = ops[nearest_ancestor(facts, facts.is_host & pattern_mask(facts, AUTOGRAD_NODE))[ops] < 0]
    seqs = sequence_numbers(facts, ops)
    ops = ops[(seqs != SEQ_NONE) & (seqs != SEQ_ODD)]
    if ops.size == 0 or float(np.median(facts.self_time[ops])) < FORWARD_TRACEBACK_SELF_NS:
        return None
    # each op's span less its children's, the children that build nodes themselves keeping their own self time
    kids = np.flatnonzero(np.isin(facts.parent, ops))
    kids = kids[~np.isin(kids, ops)]
    own = merge_intervals(trace.ts[ops], trace.ts[ops] + trace.dur[ops])
    return own.subtract(merge_intervals(trace.ts[kids], trace.ts[kids] + trace.dur[kids]))
