"""What:
Matrix multiplies in full fp32 on the CUDA cores instead of the tensor cores: GEMM ops
(aten::mm, addmm, bmm, matmul, linear...) whose `Input type` is float and whose kernels are
of the SIMT fp32 family (`sgemm`, `gemmSN`, `cutlass_80_simt_sgemm_*`, cuBLAS `xmma_gemm_f32f32_
f32f32_f32_..._ffma_...`), not the TF32 (`..._tf32f32_...`), bf16/fp16 (`nvjet_..._h_`/`_bf16`) ones.

Why:
PyTorch's default for fp32 matmuls is full precision (`torch.get_float32_matmul_precision() ==
"highest"`), which keeps them off the tensor cores. On Hopper that caps a large GEMM near 51
TFLOP/s, while TF32 runs the same call several times faster and bf16 faster again; for training
and most inference the lost mantissa bits do not matter.

Example:
gpu/fp32_gemm on an H200: a 4096x4096x4096 fp32 matmul with TF32 off runs
`sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_...` for 2.684 ms (51.2 TFLOP/s). With
`torch.set_float32_matmul_precision("high")` (gpu/tf32_gemm) the same matmul picks
`sm90_xmma_gemm_f32f32_tf32f32_f32_...` and takes 0.343 ms (400 TFLOP/s), 7.8x faster.

Fix:
`torch.set_float32_matmul_precision("high")` (or `torch.backends.cuda.matmul.allow_tf32 = True`)
to use TF32, or run the model under `torch.autocast("cuda", dtype=torch.bfloat16)`; keep
"highest" only where the extra precision is really needed.
"""

from __future__ import annotations

import math
import re

import numpy as np

from pista.findings import Context, Evidence, Finding, Severity, legacy_finding
from pista.rules._common import fmt_ns, kernels, nearest_ancestor, pattern_mask
from pista.trace.facts import Facts

ID = "fp32-gemm"
TITLE = "GEMMs in full fp32 without tensor cores"
SEVERITY = Severity.WARNING
# Share of all device work time in SIMT fp32 GEMM kernels at or above which the rule fires:
# gpu/fp32_gemm ~100%; gpu/recompile runs fp32 SIMT GEMMs too, but 14 µs of 19 ms (0.07%).
MIN_DEVICE_SHARE = 0.05
EVIDENCE_EVENTS = 3

# fp32 GEMM kernels on the CUDA cores: cuBLAS sgemm/gemmSN, CUTLASS simt, cuBLAS xmma with ffma.
SIMT_FP32_GEMM = re.compile(r"sgemm|gemmSN|_simt_|_ffma_", re.I)
TENSOR_CORE = re.compile(r"tf32|bf16|f16|hmma|_h_", re.I)
GEMM_OPS = re.compile(r"^aten::(mm|addmm|bmm|baddbmm|addbmm|matmul|linear|_addmm_activation)$")


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    trace = facts.trace
    k = kernels(facts)
    simt = k & pattern_mask(facts, SIMT_FP32_GEMM) & ~pattern_mask(facts, TENSOR_CORE)
    if not simt.any():
        return []
    idx = np.flatnonzero(simt)
    # the GEMM op that launched each kernel (its External-id owner or the nearest GEMM op above it)
    gemm_op = nearest_ancestor(facts, facts.is_host & pattern_mask(facts, GEMM_OPS))
    ops = np.where(facts.owner[idx] >= 0, gemm_op[np.maximum(facts.owner[idx], 0)], -1)
    float_inputs = np.array([op >= 0 and "float" in _input_types(facts, int(op)) for op in ops.tolist()])
    idx, ops = idx[float_inputs | (ops < 0)], ops[float_inputs | (ops < 0)]
    if idx.size == 0:
        return []
    device_ns = float(trace.dur[facts.is_device_work].sum())
    gemm_ns = float(trace.dur[idx].sum())
    share = gemm_ns / device_ns if device_ns else 0.0
    if share < MIN_DEVICE_SHARE:
        return []

    flops = [(_flops(facts, int(op)) if op >= 0 else None) for op in ops.tolist()]
    rated = [(f, int(trace.dur[i])) for f, i in zip(flops, idx.tolist(), strict=True) if f]
    tflops = sum(f for f, _ in rated) / sum(d for _, d in rated) / 1e3 if rated else None
    evidence = []
    for k_ in np.argsort(-trace.dur[idx], kind="stable")[:EVIDENCE_EVENTS].tolist():
        i, op = int(idx[k_]), int(ops[k_])
        rate = f", {flops[k_] / trace.dur[i] / 1e3:.1f} TFLOP/s" if flops[k_] else ""
        evidence.append(Evidence.of(facts, i, detail=f"fp32 SIMT GEMM kernel{rate}"))
        if op >= 0 and all(e.ts_us != trace.ts[op] / 1000.0 for e in evidence):
            dims = trace.args(op).get("Input Dims")
            evidence.append(Evidence.of(facts, op, detail=f"Input type float, dims {dims}"))
    op_names = sorted({trace.event_name(int(o)) for o in ops.tolist() if o >= 0})
    rate_text = f", {tflops:.1f} TFLOP/s achieved" if tflops else ""
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{idx.size} GEMM kernel(s) ran in full fp32 on the CUDA cores"
                 f"{' for ' + ', '.join(op_names) if op_names else ''}: {fmt_ns(gemm_ns)}, "
                 f"{100 * share:.1f}% of the GPU time{rate_text}."),
        advice=("Allow TF32 with torch.set_float32_matmul_precision('high') (or "
                "torch.backends.cuda.matmul.allow_tf32 = True), or run under torch.autocast('cuda', "
                "dtype=torch.bfloat16) so the GEMMs use the tensor cores."),
        evidence=evidence,
        metrics={
            "kernels": int(idx.size),
            "gemm_us": gemm_ns / 1000.0,
            "device_share_percent": 100.0 * share,
            "tflops": tflops,
            "ops": op_names,
        },
    )]


def _input_types(facts: Facts, op: int) -> set[str]:
    types = facts.trace.args(op).get("Input type")
    return {str(t) for t in types} if isinstance(types, list) else {""}


def _flops(facts: Facts, op: int) -> float | None:
    """2*M*N*K (times the batch) from the op's recorded input shapes."""
    dims = facts.trace.args(op).get("Input Dims")
    if not isinstance(dims, list):
        return None
    mats = [d for d in dims if isinstance(d, list) and len(d) >= 2]
    if len(mats) < 2:
        return None
    a, b = mats[-2], mats[-1]  # addmm/baddbmm put the bias first
    if a[-1] != b[-2]:
        return None
    batch = math.prod(a[:-2]) if len(a) > 2 else 1
    return 2.0 * batch * a[-2] * a[-1] * b[-1]
