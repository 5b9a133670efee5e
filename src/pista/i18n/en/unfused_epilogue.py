"""unfused-epilogue in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.unfused_epilogue import EpilogueCall, EpiloguePair, GemmCall, UnfusedEpilogue

TITLE = "A GEMM's bias or activation runs as a separate kernel"


def shape(s: tuple[int, ...] | None) -> str:
    return "x".join(map(str, s)) if s else "scalar"


def _pair(p: EpiloguePair) -> str:
    what = f"bias {shape(p.other_shape)}" if p.kind == "bias" else "activation"
    where = f" in {p.parent}" if p.parent else ""
    return (f"{p.op} ({what}) on the {shape(p.out_shape)} output of {p.gemm}{where}, {p.calls_per_step:.0f}x per step: "
            f"{t(p.elementwise_us)} per step after {t(p.gemm_us)} of GEMM")


def message(r: UnfusedEpilogue) -> str:
    where, what = "the GPU time", "in kernels"
    return (f"{'; '.join(_pair(p) for p in r.pairs)}. Together {t(r.elementwise_us)} per step, "
            f"{r.gpu_share_percent:.1f}% of {where} and {r.step_share_percent:.1f}% of the step, {what} the "
            "GEMM's epilogue could have done.")


def _change(p: EpiloguePair) -> str:
    if p.kind == "bias":
        return "use torch.addmm(bias, x, w) or F.linear(x, w.T, bias) so the bias is added in the GEMM's epilogue"
    return (f"torch.compile the block so {p.op} fuses into the GEMM's epilogue (or torch._addmm_activation for "
            "relu/gelu)")


def advice(r: UnfusedEpilogue) -> str:
    kinds = {p.kind for p in r.pairs}
    parts = []
    if "bias" in kinds:
        parts.append("Put the bias into the GEMM: torch.addmm(bias, x, w) or F.linear(x, w.T, bias) (what nn.Linear "
                     "does) runs one GEMM with a bias epilogue instead of a GEMM and an add that reads and writes the "
                     "whole output again.")
    if "activation" in kinds:
        parts.append("For the activation, torch.compile the block (mode='max-autotune' can fuse it into the GEMM's "
                     "epilogue) or call torch._addmm_activation(bias, x, w, use_gelu=...) for relu/gelu.")
    return " ".join(parts)


def fix(r: UnfusedEpilogue) -> str:
    p = r.pairs[0]
    where = f" in {p.parent}" if p.parent else ""
    return f"{p.op} after {p.gemm}{where} takes {t(p.elementwise_us)} per step: {_change(p)}"


def basis(r: UnfusedEpilogue) -> str:
    return ("the separate elementwise kernels' time per step (upper bound: the epilogue itself costs a little, "
            "1.2 µs on a 4096 bf16 GEMM on the H200)")


NOTES = {
    GemmCall: lambda n: f"GEMM kernel {t(n.kernel_us)}",
    EpilogueCall: lambda n: (f"separate {'bias add' if n.kind == 'bias' else 'activation'} on the output of {n.gemm}, "
                             f"kernel {t(n.kernel_us)}"),
}
