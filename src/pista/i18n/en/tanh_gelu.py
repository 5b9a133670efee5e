"""tanh-gelu in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.tanh_gelu import ChainOp, TanhGelu

TITLE = "GELU's tanh formula runs as eight ops where one kernel does it"


def message(r: TanhGelu) -> str:
    fp32 = " in fp32 (autocast runs pow and tanh in fp32)" if r.fp32 else ""
    return (f"{r.chains_per_step:.0f} times per step the tanh approximation of GELU is computed op by op{fp32}: "
            f"{r.ops_per_chain} ops (aten::mul, aten::pow, aten::add, aten::tanh...) and their kernels "
            f"({t(r.kernel_us_per_step)} of GPU time per step) where F.gelu(x, approximate='tanh') is one. The GPU "
            f"idles {t(r.idle_us_per_step)} per step while the host dispatches them.")


def advice(r: TanhGelu) -> str:
    return ("Use torch.nn.functional.gelu(x, approximate='tanh'), the same function in one kernel; for a "
            "transformers model, set activation_function='gelu_pytorch_tanh' in its config (GPT-2's 'gelu_new' is "
            "this formula written out).")


def fix(r: TanhGelu) -> str:
    return (f"GELU's tanh formula runs as {r.ops_per_chain} ops {r.chains_per_step:.0f} times per step: use "
            "F.gelu(x, approximate='tanh') (transformers: activation_function='gelu_pytorch_tanh').")


def basis(r: TanhGelu) -> str:
    return (f"the GPU idle under the chains' ops while the host dispatches them, times 1 - 1/{r.ops_per_chain} (one "
            "op instead of the chain), per step; their kernels' GPU time is not counted")


NOTES = {
    ChainOp: lambda n: f"op {n.position} of a {n.of}-op tanh-GELU chain",
}
