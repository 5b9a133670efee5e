"""fp64-gemm in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.fp64_gemm import Fp64Call, Fp64Gemm

TITLE = "GEMMs in double precision (fp64)"
_HOW = {"tf32": "float32 with TF32 (torch.set_float32_matmul_precision('high'))", "fp32": "float32"}


def _shape(r: Fp64Gemm) -> str:
    b, m, n, k = r.shape
    return (f"{b} x " if b > 1 else "") + f"{m}x{n}x{k}"


def message(r: Fp64Gemm) -> str:
    return (f"{r.calls} fp64 GEMM call(s) ({', '.join(r.ops)}; largest {_shape(r)}) take {t(r.gemm_us)} on "
            f"{r.kernel} at {r.tflops:.0f} TFLOP/s; in {r.target} the {r.card or 'card'} reaches "
            f"{r.target_tflops:.0f} TFLOP/s, {t(r.saved_us / r.steps)} less per step.")


def advice(r: Fp64Gemm) -> str:
    return (f"Keep the tensors of {', '.join(r.ops)} in {_HOW[r.target]} (or bf16 under autocast): find where "
            "float64 comes in (torch.from_numpy of a float64 array, Python floats, dtype=torch.double) and "
            "convert once; keep float64 only for the reductions that need it.")


def fix(r: Fp64Gemm) -> str:
    return (f"{r.ops[0]} runs in fp64 ({_shape(r)}, {r.tflops:.0f} TFLOP/s): cast its inputs to float32 with TF32 "
            f"or to bf16, saving up to {t(r.saved_us / r.steps)} per step.")


def basis(r: Fp64Gemm) -> str:
    return (f"per call, its time minus its FLOPs at the card's {r.target} ceiling ({r.target_tflops:.0f} TFLOP/s), "
            "per step (upper bound: the algorithm may need fp64)")


NOTES = {
    Fp64Call: lambda n: f"fp64 GEMM at {n.tflops:.0f} TFLOP/s; {t(n.saved_us)} less in a faster precision",
}
