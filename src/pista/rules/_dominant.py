"""The device work that dominates the trace: one kernel (else one op's kernels) holding most of the
device time: not a rule.

dominant-event reports it; compute-bound leaves the trace to it where there is one.
"""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Record

# the thresholds below are dominant-event's (`pista explain dominant-event`, [tool.pista.rules.dominant-event])
THRESHOLDS_OF = "dominant-event"

# Share of Self CUDA total. The fixtures split cleanly: one GEMM holds 80-100% in the seed_mm4096_*
# and seed_mm64_compile traces; no kernel passes 52% in seed_mm64_{warm,cold} (the add kernel
# takes about half), 24% in series_linear_train, 10% in series_mlp_*, 10% in big_gpt_eager_20steps.
DOMINANT_SHARE = 0.6
# A GEMM at this share of the card's ceiling or more is doing its job: nothing to ask of the kernel. On an H100
# (torch 2.11, its 8192^3 bf16 GEMM at 732 TFLOP/s), torch.compile(mode="max-autotune-no-cudagraphs") against
# cuBLAS on the shapes of tl_h100_qwen05 (8944x1024x1024, 8944x2816x1024, 8944x1024x2816: 77, 88 and 97% of
# that), tl_compile_triton (32768x2048x8192: 95%) and tl_sglang_prefilldecode (15360x24576x4096: 98%) gained
# -30%, +0.5%, -0.7%, -0.4% and +0.1%; review 3 of issue 35 marks "let max-autotune pick a better kernel" at
# 75-88% of the MI300X's measured 620 TFLOP/s misleading (tl_compile_triton, tl_sglang_prefilldecode,
# tl_mi300_qwen05).
NEAR_PEAK_SHARE = 0.75


class Dominant(Record):
    """Which events dominate: the kind, the name and the event indices."""

    kind: str
    name: str
    members: np.ndarray
    total_ns: int  # all device work


def dominant(ctx: Context) -> Dominant | None:
    """The kernel (else the op) holding DOMINANT_SHARE of the device time, or None."""
    facts = ctx.facts
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work)
    total = int(trace.dur[work].sum())
    if work.size == 0 or total <= 0:
        return None
    dur = trace.dur[work]
    names, inverse = np.unique(trace.name[work], return_inverse=True)
    per_name = np.bincount(inverse, weights=dur)
    best = int(np.argmax(per_name))
    if per_name[best] / total >= DOMINANT_SHARE:
        members = work[inverse == best]
        category = trace.event_category(int(members[0]))
        kind = {"gpu_memcpy": "copy", "gpu_memset": "memset"}.get(category, "kernel")
        return Dominant(kind, trace.names[int(names[best])], members, total)
    # no single kernel: an op whose launches (possibly several kernels) add up to most of it
    owned = facts.owner[work] >= 0
    if not owned.any():
        return None
    owner_names = trace.name[facts.owner[work[owned]]]
    onames, oinv = np.unique(owner_names, return_inverse=True)
    per_op = np.bincount(oinv, weights=dur[owned])
    ob = int(np.argmax(per_op))
    if per_op[ob] / total < DOMINANT_SHARE:
        return None
    return Dominant("op", trace.names[int(onames[ob])], work[owned][oinv == ob], total)
