"""unfused-elementwise in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.unfused_elementwise import (
    GELU_SHARE,
    Chain,
    ChainKernel,
    Run,
    RunKernel,
    UnfusedElementwise,
    WrittenOut,
)

TITLE = "Chains of memory-bound elementwise kernels, each a full pass over memory"

_DTYPE = {"float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16", "double": "fp64"}


def _chain(c: Chain) -> str:
    ops = " > ".join(o.removeprefix("aten::") for o in c.ops)
    shape = "x".join(map(str, c.shape))
    return (f"{len(c.ops)} kernels ({ops}) on {shape} {_DTYPE.get(c.dtype, c.dtype)}, {c.count}x in the window: "
            f"{t(c.us)} per step at {c.tbps:.2f} TB/s")


def _ceiling(r: UnfusedElementwise | WrittenOut) -> str:
    where = {"measured": f"measured on the {r.card}", "datasheet": f"estimated for the {r.card}",
             "trace": "the best in this trace"}[r.ceiling_source]
    return f"{r.ceiling_tbps:.2f} TB/s, {where}"


def message(r: UnfusedElementwise | WrittenOut) -> str:
    if isinstance(r, WrittenOut):
        return _written_message(r)
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


def advice(r: UnfusedElementwise | WrittenOut) -> str:
    if isinstance(r, WrittenOut):
        return _written_advice(r)
    c = r.chains[0]
    return _gelu(r) + (f"Fuse the chain ({' > '.join(c.ops)}): torch.compile the function or module that runs it, so Inductor "
            "emits one kernel that reads the inputs once and writes the result once; in-place variants do not help "
            "(each is still a pass). Without compile, a hand-written Triton kernel does the same.")


def fix(r: UnfusedElementwise | WrittenOut) -> str:
    if isinstance(r, WrittenOut):
        return _written_fix(r)
    c = r.chains[0]
    return (f"{len(c.ops)} elementwise kernels in a row ({' > '.join(o.removeprefix('aten::') for o in c.ops)}) take "
            f"{t(c.us)} per step at the bandwidth limit: torch.compile them into one kernel")


def basis(r: UnfusedElementwise | WrittenOut) -> str:
    if isinstance(r, WrittenOut):
        chains = "; plus (N-1)/N of each same-shape chain outside them" if r.chains else ""
        return (f"per run written out op by op, its kernel time less one fused pass (one read and one write of its "
                f"largest tensor at {_ceiling(r)}, and no less than its longest kernel), per step{chains}")
    return "(N-1)/N of each chain's kernel time per step, the passes a fused kernel saves (upper bound)"


# -- elementwise code written out op by op ------------------------------------------------------------------

IDIOM = {"rmsnorm": "RMSNorm", "layernorm": "LayerNorm", "rotary": "rotary embedding",
         "gate": "gated activation", "other": "elementwise code"}
# the fused op for each idiom, where one exists
FUSED_OP = {
    "rmsnorm": "F.rms_norm(x, (d,), weight, eps) or nn.RMSNorm for the RMSNorm (a fused RMSNorm kernel, such as "
               "Liger Kernel's, in a transformers model)",
    "layernorm": "F.layer_norm or nn.LayerNorm for the LayerNorm",
    "rotary": "a fused rotary kernel for the rotary embedding (flash_attn.layers.rotary.apply_rotary_emb, Liger "
              "Kernel's liger_rotary_pos_emb)",
    "gate": "a fused SwiGLU/GeGLU kernel for the gated activation, without a .float()/.to() round trip around it",
}


def _where(u: Run) -> str:
    if u.module and u.frame:
        return f" in {u.module} ({u.frame})"
    return f" in {u.module or u.frame}" if u.module or u.frame else ""


def _run(u: Run) -> str:
    ops = " > ".join(o.removeprefix("aten::") for o in u.ops)
    return f"{IDIOM[u.idiom]}{_where(u)}: {ops}, {u.count}x in the window, {t(u.us)} per step"


def _written_message(r: WrittenOut) -> str:
    chains = (f" Besides, same-shape chains elsewhere: {'; '.join(_chain(c) for c in r.chains)}." if r.chains else "")
    return (f"Eager elementwise, reduction and cast kernels take {t(r.eager_us)} per step ({r.eager_percent:.0f}% of the "
            f"GPU time); {t(r.runs_us)} of it ({r.gpu_share_percent:.0f}%) is code written out op by op, each op a "
            f"pass over memory: {'; '.join(_run(u) for u in r.runs[:3])}.{chains} Fused, each run is about one pass "
            f"over its largest tensor ({_ceiling(r)}): {t(r.fused_us)} instead of {t(r.runs_us)}, about "
            f"{t(r.saving_us)} saved per step, {r.step_share_percent:.1f}% of the step.")


def _modules(r: WrittenOut) -> str:
    names = list(dict.fromkeys(u.module for u in r.runs[:3] if u.module))
    return f" (or the modules named: {', '.join(names)})" if names else ""


def _written_advice(r: WrittenOut) -> str:
    ops = [FUSED_OP[i] for i in dict.fromkeys(u.idiom for u in r.runs[:3]) if i in FUSED_OP]
    fused = f" Without compile, the fused ops: {'; '.join(ops)}." if ops else " Without compile, a hand-written Triton kernel does the same."
    return (f"torch.compile the model{_modules(r)}: Inductor turns each run into one kernel that reads its inputs once "
            f"and writes its result once; in-place variants do not help (each is still a pass).{fused}")


def _written_fix(r: WrittenOut) -> str:
    u = r.runs[0]
    also = f", or {FUSED_OP[u.idiom].split(' for the ')[0]}" if u.idiom in FUSED_OP else ""
    return (f"{t(r.runs_us)} per step of elementwise code written out op by op ({IDIOM[u.idiom]}{_where(u)} first): "
            f"torch.compile it{also}")


NOTES = {
    RunKernel: lambda n: f"{n.position} of {n.length} in a run written out op by op ({IDIOM[n.idiom]}), launched by {n.op}",
    ChainKernel: lambda n: f"{n.position} of {n.length} in a chain, launched by {n.op}, {n.tbps:.2f} TB/s",
}
