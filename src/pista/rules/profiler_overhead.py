"""What:
The profiler's own work ("Activity Buffer Request", "Buffer Flush": CUPTI allocating and
draining its activity buffers) drawn on the pid -1 overhead lane, and which ops it landed in.

Why:
This time is spent on the profiled thread while an op is running: the op's wall time (CPU total)
and every region above it grow by that much, though the program without the profiler would not
pay it. torch nests the event under the op, so Self CPU stays right, but step widths, CPU totals
and gaps on the GPU timeline do not.

Example:
`seed_mm64_cold`: one Activity Buffer Request of 2.505 ms inside aten::mm in step 0, 2.3% of that
op's 107.271 ms; in `seed_mm4096_compile_cold` 2.880 ms inside the compiled graph's call, 76% of
its 3.794 ms.

Fix:
Nothing to change in the program: discount the named ops' CPU totals by that amount, profile more
steps so one buffer request weighs less, or skip the first active step (the buffers are requested
early).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from pista.findings import Context, Finding, Severity, legacy_finding
from pista.rules._common import evidence, fmt_ns, step_at, us
from pista.rules.lazy_loading import LOADING_NAMES

ID = "profiler-overhead"
TITLE = "Profiler overhead inflates the ops it lands in"
SEVERITY = Severity.INFO

# seed_mm64_cold has 2.505 ms of it, seed_mm4096_compile_cold 2.880 ms, big_gpt_eager_20steps
# 3.063 ms; the other fixtures none. Below 50 µs it would not move any number that matters.
PROFILER_OVERHEAD_MIN_US = 50.0
EVIDENCE_EVENTS = 5  # events shown (the longest); presentation


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    loading = [i for i, name in enumerate(trace.names) if name in LOADING_NAMES]
    idx = np.flatnonzero(facts.is_overhead & ~np.isin(trace.name, loading) & (trace.dur > 0))
    total = int(trace.dur[idx].sum())
    if idx.size == 0 or us(total) < PROFILER_OVERHEAD_MIN_US:
        return []
    idx = idx[np.argsort(-trace.dur[idx], kind="stable")]
    lo, hi = facts.window

    hosts: dict[int, list[int]] = defaultdict(list)
    for i in idx.tolist():
        hosts[int(facts.parent[i])].append(i)
    parts, inflated, notes = [], {}, {}
    for host, events in sorted(hosts.items(), key=lambda kv: -int(trace.dur[kv[1]].sum())):
        spent = int(trace.dur[events].sum())
        if host >= 0:
            share = 100.0 * spent / max(int(trace.dur[host]), 1)
            name = trace.event_name(host)
            parts.append(f"{fmt_ns(spent)} inside {name} ({share:.1f}% of its {fmt_ns(trace.dur[host])})")
            inflated[name] = inflated.get(name, 0.0) + us(spent)
            host_ns = max(int(trace.dur[host]), 1)
            together = f"; all {len(events)} there: {share:.1f}%" if len(events) > 1 else ""
            for i in events:
                notes[i] = f"inside {name}, {100.0 * int(trace.dur[i]) / host_ns:.1f}% of its wall time{together}"
        else:
            parts.append(f"{fmt_ns(spent)} outside any op")
    names = sorted({trace.event_name(i) for i in idx})
    steps = sorted({s for s in (step_at(facts, int(trace.ts[i])) for i in idx) if s is not None})
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{idx.size} profiler overhead event{'s' if idx.size > 1 else ''} ({', '.join(names)}), "
                 f"{fmt_ns(total)} in all, {100.0 * total / max(hi - lo, 1):.2f}% of the window: "
                 + "; ".join(parts) + "."),
        advice=("Discount these from the named ops' CPU totals and their steps' widths; profile more "
                "steps (or skip the first active one) so the buffer requests weigh less."),
        evidence=[evidence(facts, int(i), detail=notes.get(int(i), "")) for i in idx[:EVIDENCE_EVENTS]],
        metrics={
            "events": int(idx.size),
            "total_us": us(total),
            "window_percent": 100.0 * total / max(hi - lo, 1),
            "inflated_ops_us": inflated,
            "steps": steps,
        },
    )]
