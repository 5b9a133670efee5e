"""unfused-elementwise in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.unfused_elementwise import GELU_SHARE, Chain, ChainKernel, UnfusedElementwise

TITLE = "Chains of memory-bound elementwise kernels, each a full pass over memory"

_DTYPE = {"float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16", "double": "fp64"}


def _chain(c: Chain) -> str:
    ops = " > ".join(o.removeprefix("aten::") for o in c.ops)
    shape = "x".join(map(str, c.shape))
    return (f"{len(c.ops)} kernels ({ops}) on {shape} {_DTYPE.get(c.dtype, c.dtype)}, {c.count}x in the window: "
            f"{t(c.us)} per step at {c.tbps:.2f} TB/s")


def _ceiling(r: UnfusedElementwise) -> str:
    where = {"measured": f"measured on the {r.card}", "datasheet": f"estimated for the {r.card}",
             "trace": "the best in this trace"}[r.ceiling_source]
    return f"{r.ceiling_tbps:.2f} TB/s, {where}"


def message(r: UnfusedElementwise) -> str:
    return (f"{'; '.join(_chain(c) for c in r.chains)}. Each kernel runs near the memory bandwidth ({_ceiling(r)}), so "
            f"each is one more pass over the tensor: {r.kernels_per_step:.0f} kernels take {t(r.chain_us)} per step "
            f"({r.gpu_share_percent:.1f}% of the GPU time); one fused kernel per chain would save about "
            f"{t(r.saving_us)}, {r.step_share_percent:.1f}% of the step.")


def _gelu(r: UnfusedElementwise) -> str:
    if r.tanh_gelu_percent < GELU_SHARE:
        return ""
    return (f"{r.tanh_gelu_percent:.0f}% of this is GELU's tanh formula written out (aten::pow, aten::tanh...): "
            "F.gelu(x, approximate='tanh') is one kernel forward and one backward (transformers: "
            "activation_function='gelu_pytorch_tanh'). ")


def advice(r: UnfusedElementwise) -> str:
    c = r.chains[0]
    return _gelu(r) + (f"Fuse the chain ({' > '.join(c.ops)}): torch.compile the function or module that runs it, so Inductor "
            "emits one kernel that reads the inputs once and writes the result once; in-place variants do not help "
            "(each is still a pass). Without compile, a hand-written Triton kernel does the same.")


def fix(r: UnfusedElementwise) -> str:
    c = r.chains[0]
    return (f"{len(c.ops)} elementwise kernels in a row ({' > '.join(o.removeprefix('aten::') for o in c.ops)}) take "
            f"{t(c.us)} per step at the bandwidth limit: torch.compile them into one kernel")


def basis(r: UnfusedElementwise) -> str:
    return "(N-1)/N of each chain's kernel time per step, the passes a fused kernel saves (upper bound)"


NOTES = {
    ChainKernel: lambda n: f"{n.position} of {n.length} in a chain, launched by {n.op}, {n.tbps:.2f} TB/s",
}
