"""fp32-gemm in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.fp32_gemm import FloatOp, Fp32Gemm, SimtKernel

TITLE = "GEMMs in full fp32 without tensor cores"


def _shape(r: Fp32Gemm) -> str:
    if not r.shape:
        return ""
    b, m, n, k = r.shape
    return f" (the longest {f'{b} x ' if b > 1 else ''}{m}x{n}x{k})"


def _target(r: Fp32Gemm) -> str:
    if r.target_tflops is None:
        return (f"{r.target.upper()} (assumed {r.assumed_speedup or 7:g}x faster: {r.card or 'this GPU'} is not in "
                "pista's peak table)")
    how = "measured" if r.target_measured else "estimated from the datasheet"
    return f"this {r.card}'s {r.target.upper()} ceiling of {r.target_tflops:.0f} TFLOP/s ({how})"


def message(r: Fp32Gemm) -> str:
    ops = f" for {', '.join(r.ops)}" if r.ops else ""
    rate = f" at {r.tflops:.1f} TFLOP/s" if r.tflops else ""
    conv = f" ({r.conv_kernels} of them cuDNN's, for convolutions)" if r.conv_kernels else ""
    text = (f"{r.kernels} GEMM kernel(s){conv} ran in full fp32 on the CUDA cores{ops}{_shape(r)}: {t(r.gemm_us)}, "
            f"{r.device_share_percent:.1f}% of the GPU time{rate}. At {_target(r)} they would take "
            f"{t(r.saved_us / r.steps)} less GPU time per step.")
    if r.off_path:
        text += (f" As profiled the step does not wait for them: the GPU is busy {r.gpu_busy_percent:.0f}% of the "
                 "window and waits for the host the rest, so the step gets shorter only once the host keeps the GPU "
                 "busy (fix that first, then this).")
    return text


def advice(r: Fp32Gemm) -> str:
    if r.target == "bf16":
        return (f"On {r.card or 'this GPU'} (a GeForce card) TF32 runs at the CUDA cores' fp32 rate, so "
                "torch.set_float32_matmul_precision('high') saves nothing: run the GEMMs under "
                "torch.autocast('cuda', dtype=torch.bfloat16), twice the fp32 rate on its tensor cores.")
    if r.target == "fp16":
        return (f"{r.card or 'This GPU'} has no TF32: move the GEMMs onto its fp16 tensor cores with mixed precision, "
                "torch.autocast('cuda', dtype=torch.float16) and a torch.cuda.amp.GradScaler for training.")
    return ("Allow TF32 with torch.set_float32_matmul_precision('high') (or torch.backends.cuda.matmul.allow_tf32 = "
            "True), or run under torch.autocast('cuda', dtype=torch.bfloat16) so the GEMMs use the tensor cores.")


def fix(r: Fp32Gemm) -> str:
    ops = ", ".join(r.ops) or "the GEMMs"
    change = {"fp16": "torch.autocast('cuda', dtype=torch.float16)",
              "bf16": "torch.autocast('cuda', dtype=torch.bfloat16)"}.get(
                  r.target, "torch.set_float32_matmul_precision('high')")
    rate = f" at {r.tflops:.0f} TFLOP/s" if r.tflops else ""
    verb = "runs" if len(r.ops) == 1 else "run"
    return (f"{ops} {verb} in full fp32{rate}, {t(r.gemm_us / r.steps)} per step: {change} saves about "
            f"{t(r.saved_us / r.steps)} of GPU time per step.")


def basis(r: Fp32Gemm) -> str:
    if r.off_path:
        return (f"the replay of the profiled steps with the GEMMs at {r.target.upper()} saves none of the step: they "
                f"free {t(r.saved_us / r.steps)} of GPU time per step that the host does not use yet")
    where = (f"at the card's {r.target.upper()} ceiling" if r.target_tflops
             else f"{r.target.upper()} assumed {r.assumed_speedup or 7:g}x faster (GPU not in the peak table)")
    return (f"per fp32 GEMM call, its time minus its FLOPs {where}, summed per step (an upper bound: small GEMMs "
            "do not reach the ceiling, and where the host is the limit part of it stays hidden)")


NOTES = {
    SimtKernel: lambda n: "fp32 SIMT GEMM kernel" + (f", {n.tflops:.1f} TFLOP/s" if n.tflops else ""),
    FloatOp: lambda n: (f"Input type float, dims {[list(d) for d in n.dims]}" if n.dims
                        else "its input types were not recorded (record_shapes=False)"),
}
