"""What:
An op or a kernel is called very many times per step and, all calls together, costs a real share
of the step: each call is cheap, the count is the problem.

Why:
Every call pays the same fixed toll: Python and the dispatcher for an op (10-20 µs), a launch for
a kernel (5-10 µs on the host, a few µs of GPU ramp). A hundred tiny calls cost a hundred tolls;
one batched or fused call pays once.

Example:
`tests/fixtures/gpu/launch_bound` (200 tiny elementwise ops on 256 floats per step): aten::add
is called 100 times per step and costs 1.643 ms of wall time per step, 37% of the 4.414 ms median
step; aten::mul the same. Each call's kernel runs for about 1 µs.

Fix:
Batch the work (one op on a stacked tensor instead of a loop of ops on slices), use the
`torch._foreach_*` / fused optimizer variants, fuse with torch.compile, or replay the whole step
as a CUDA graph so the per-call host cost disappears.
"""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Finding, Severity, legacy_finding
from pista.rules._common import ancestors_match, device_time_under, evidence, fmt_ns, mark_ancestors, us

ID = "many-calls"
TITLE = "Called very many times per step"
SEVERITY = Severity.WARNING

# Calls per step. launch_bound calls aten::add/aten::mul 100 times a step, big_gpt_eager_20steps
# aten::to 271 times; the busiest name in series_mlp_eager is aten::empty_strided at 52 a step,
# in the other fixtures fewer than 40: 64 sits between a model's normal op count and a loop.
MANY_CALLS_PER_STEP = 64
# ...and all its calls together must cost this share of the median step: launch_bound's aten::add
# is 37%, big_gpt's aten::to 16%; big_gpt's aten::view (349 calls, 1.6%) is metadata only, cheap.
MANY_CALLS_MIN_STEP_SHARE = 0.05
# ...and its calls must be host-heavy: GPU time per call under this share of the call's own cost
# (wall time for an op, launch + kernel for a kernel). launch_bound's aten::add runs a 1 µs kernel
# per 16 µs call (0.06), big_gpt's aten::to 0.16; big_gpt's aten::mm (99 a step, the model's own
# layers, not a loop) keeps the GPU busy for most of each call and is left out.
MANY_CALLS_MAX_DEVICE_SHARE = 0.5
MANY_CALLS_MAX_FINDINGS = 3  # big_gpt_eager_20steps has 3 distinct candidates; more would be noise
EVIDENCE_EVENTS = 3  # calls shown, from the first step; presentation


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    if facts.steps:
        in_window = facts.event_step >= 0
        n_steps = len(facts.steps)
        step_ns = float(np.median([s.dur for s in facts.steps]))
    else:
        in_window = np.ones(len(trace), dtype=bool)
        n_steps = 1
        lo, hi = facts.window
        step_ns = float(hi - lo)
    if step_ns <= 0:
        return []
    min_calls = MANY_CALLS_PER_STEP * n_steps
    min_cost = MANY_CALLS_MIN_STEP_SHARE * step_ns * n_steps

    # ops: count an op once where it recurses into itself (aten::to inside aten::to)
    ops = np.flatnonzero(facts.is_host & trace.category_mask({"cpu_op"}) & in_window)
    parent_name = np.where(facts.parent[ops] >= 0, trace.name[np.maximum(facts.parent[ops], 0)], -1)
    ops = ops[parent_name != trace.name[ops]]
    work = np.flatnonzero(facts.is_device_work & in_window)
    launch_ns = np.where(facts.launcher[work] >= 0, trace.dur[np.maximum(facts.launcher[work], 0)], 0)

    device = device_time_under(facts)
    candidates = []
    for kind, idx, cost, gpu in (("op", ops, trace.dur[ops], device[ops]),
                                 ("kernel", work, trace.dur[work] + launch_ns, trace.dur[work])):
        if idx.size == 0:
            continue
        names, inverse, counts = np.unique(trace.name[idx], return_inverse=True, return_counts=True)
        totals = np.bincount(inverse, weights=cost.astype(np.float64))
        gpu_totals = np.bincount(inverse, weights=gpu.astype(np.float64))
        keep = (counts >= min_calls) & (totals >= min_cost) & (gpu_totals < MANY_CALLS_MAX_DEVICE_SHARE * totals)
        for k in np.flatnonzero(keep).tolist():
            candidates.append((float(totals[k]), kind, int(names[k]), idx[inverse == k]))
    candidates.sort(key=lambda c: -c[0])

    findings: list[Finding] = []
    reported: list[int] = []
    covered = np.zeros(len(trace), dtype=bool)  # reported ops' instances and everything above them
    for total, kind, name_id, members in candidates:
        if len(findings) >= MANY_CALLS_MAX_FINDINGS:
            break
        # a kernel of a reported op, or an op mostly called from inside one, says the same thing again
        if reported:
            ids = np.asarray(reported, dtype=trace.name.dtype)
            if kind == "op":
                nested = ancestors_match(facts, members, ids) | covered[members]
            else:
                owner = facts.owner[members]
                nested = np.zeros(members.size, dtype=bool)
                has = owner >= 0
                nested[has] = covered[owner[has]] | ancestors_match(facts, owner[has], ids)
            if nested.mean() >= 0.5:
                continue
        reported.append(name_id)
        if kind == "op":
            covered[members] = True
            mark_ancestors(facts, members, covered)
        findings.append(_finding(ctx, kind, name_id, members, total, n_steps, step_ns))
    return findings


def _finding(ctx: Context, kind: str, name_id: int, members: np.ndarray, total: float, n_steps: int,
             step_ns: float) -> Finding:
    facts = ctx.facts
    trace = facts.trace
    name = trace.names[name_id]
    calls = int(members.size)
    per_step = calls / n_steps
    cost_per_step = total / n_steps
    share = cost_per_step / step_ns
    members = members[np.argsort(trace.ts[members], kind="stable")]
    first_step = facts.event_step[members[0]]
    shown = members[facts.event_step[members] == first_step][:EVIDENCE_EVENTS]
    avg = float(trace.dur[members].mean())
    if kind == "op":
        what = f"wall time {fmt_ns(cost_per_step)} per step"
        extra: dict[str, float] = {}
    else:
        device = float(trace.dur[members].sum()) / n_steps
        what = (f"{fmt_ns(cost_per_step)} per step counting its launches ({fmt_ns(device)} on the GPU, "
                f"{fmt_ns(cost_per_step - device)} launching)")
        extra = {"device_us_per_step": device / 1000.0, "launch_us_per_step": (cost_per_step - device) / 1000.0}
    step_word = "per step" if facts.steps else "in the window"
    return legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{'Op' if kind == 'op' else 'Kernel'} {name} is called {per_step:.0f} times {step_word} "
                 f"({calls} calls in all, {fmt_ns(avg)} each on average): {what}, "
                 f"{100.0 * share:.1f}% of the {fmt_ns(step_ns)} {'median step' if facts.steps else 'window'}."),
        advice=("Batch these calls (one op on a stacked tensor instead of a loop), use foreach/fused variants, "
                "fuse with torch.compile, or capture the step as a CUDA graph."),
        evidence=[evidence(facts, int(i), detail=f"one of {per_step:.0f} calls {step_word}") for i in shown],
        metrics={
            "kind": kind,
            "name": name,
            "calls": calls,
            "calls_per_step": per_step,
            "cost_us_per_step": cost_per_step / 1000.0,
            "step_share_percent": 100.0 * share,
            "avg_us": us(avg),
            **extra,
        },
    )
