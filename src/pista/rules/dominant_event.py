"""What:
One kernel, copy or memset (or one op, counting the device work it launched) holds most of the
Self CUDA total: it is where any GPU-side optimisation has to start.

Why:
Amdahl: shaving 10% off a kernel that is 95% of the GPU time saves 9.5%; making everything else
free saves 5%. Knowing its calls and average tells whether to make each call cheaper or to call
it less.

Example:
`seed_mm4096_compile` (compiled matmul_add at 4096): nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_NNT
holds 99.56% of the 528.322 µs Self CUDA total, 3 calls, 175.339 µs each, launched by aten::addmm.

Fix:
Work on that kernel: lower precision (bf16, fp8) where accuracy allows, better shapes (multiples
of 64/128), a fused epilogue, fewer calls. A copy (gpu/pageable_memcpy: Memcpy DtoH to pageable
memory, 81.7%) is not compute: move fewer bytes, from pinned memory, without blocking. If the
trace is host-bound (see `overhead-bound`), the kernel is not the limit yet: fix the host side
first.
"""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Finding, Severity, legacy_finding, top_indices
from pista.rules._common import evidence, fmt_ns, us

ID = "dominant-event"
TITLE = "One kernel, copy or op dominates the GPU time"
SEVERITY = Severity.INFO

# Share of Self CUDA total. The fixtures split cleanly: one GEMM holds 80-100% in the seed_mm4096_*
# and seed_mm64_compile traces; no kernel passes 52% in seed_mm64_{warm,cold} (the add kernel
# takes about half), 24% in series_linear_train, 10% in series_mlp_*, 10% in big_gpt_eager_20steps.
DOMINANT_SHARE = 0.6
EVIDENCE_EVENTS = 3  # instances shown (the longest); presentation, not a threshold


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work)
    total = int(trace.dur[work].sum())
    if work.size == 0 or total <= 0:
        return []
    dur = trace.dur[work]

    kind, name_id = "kernel", None
    names, inverse = np.unique(trace.name[work], return_inverse=True)
    per_name = np.bincount(inverse, weights=dur)
    best = int(np.argmax(per_name))
    if per_name[best] / total >= DOMINANT_SHARE:
        name_id = int(names[best])
        members = work[inverse == best]
    else:
        # no single kernel: an op whose launches (possibly several kernels) add up to most of it
        owned = facts.owner[work] >= 0
        if not owned.any():
            return []
        owner_names = trace.name[facts.owner[work[owned]]]
        onames, oinv = np.unique(owner_names, return_inverse=True)
        per_op = np.bincount(oinv, weights=dur[owned])
        ob = int(np.argmax(per_op))
        if per_op[ob] / total < DOMINANT_SHARE:
            return []
        kind, name_id = "op", int(onames[ob])
        members = work[owned][oinv == ob]

    spent = int(trace.dur[members].sum())
    share = spent / total
    name = trace.names[name_id]
    if kind == "kernel":
        calls = int(members.size)
        owners = facts.owner[members]
        owners = owners[owners >= 0]
        launched_by = trace.names[int(np.bincount(trace.name[owners]).argmax())] if owners.size else ""
        where = f", launched by {launched_by}" if launched_by else ""
        label = {"gpu_memcpy": "Copy", "gpu_memset": "Memset"}.get(trace.event_category(int(members[0])), "Kernel")
        kind = label.lower()
    else:
        op_events = np.unique(facts.owner[members])
        calls = int(op_events.size)
        launched_by = name
        label = "Op"
        kernels = len(np.unique(trace.name[members]))
        where = f" across {kernels} kernel{'s' if kernels > 1 else ''}"
    member_mask = np.zeros(len(trace), dtype=bool)
    member_mask[members] = True
    picks = top_indices(trace.dur, member_mask, EVIDENCE_EVENTS)
    avg = spent / max(calls, 1)
    host_bound = ctx.summary.verdict == "overhead-bound"
    advice = (f"Start GPU-side optimisation with {name}: lower precision where accuracy allows, better "
              "shapes, fused epilogues, or fewer calls.")
    if kind in ("copy", "memset"):
        # moving or clearing bytes, not computing: the fixes are about transfers, not kernels
        advice = (f"{name} is a {kind}, not compute: move fewer bytes (keep tensors on the GPU, copy once, "
                  "a smaller dtype), copy from pinned memory with non_blocking=True so it overlaps compute "
                  "(see pageable-memcpy), and batch many small copies into one.")
    elif host_bound:
        advice = ("The trace is host-bound, so this kernel is not the limit yet: cut host overhead first "
                  f"(see overhead-bound); after that, {name} is where GPU time goes.")
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{label} {name} holds {100.0 * share:.2f}% of the "
                 f"{fmt_ns(total)} Self CUDA total{where}: {calls} call{'s' if calls != 1 else ''}, "
                 f"{fmt_ns(spent)} in all, {fmt_ns(avg)} per call on average."),
        advice=advice,
        evidence=[evidence(facts, int(i), detail="longest instance") for i in picks],
        metrics={
            "kind": kind,
            "name": name,
            "share_percent": 100.0 * share,
            "total_us": us(spent),
            "calls": calls,
            "avg_us": us(avg),
            "self_device_total_us": us(total),
            "launched_by": launched_by,
            "host_bound": host_bound,
        },
    )]
