"""manual-attention: the arguments of its text (ftl/<lang>/manual_attention.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.manual_attention import MASK_OPS, ManualAttention, ScoreKernel


def args(r: ManualAttention, say: Say) -> dict[str, str]:
    return {
        "layers": f"{r.layers_per_step:.0f}", "has_shape": yes(r.score_shape),
        "shape": "x".join(str(d) for d in r.score_shape), "ops": ", ".join(o.removeprefix("aten::") for o in r.ops),
        "forward_us": t(r.forward_us), "backward_us": t(r.backward_us), "saved_us": t(r.gpu_saved_us),
        "masked": yes(set(r.ops) & MASK_OPS), "per_step": yes(r.steps > 1), "busy": f"{r.busy_percent:.0f}",
    }


NOTES = {
    ScoreKernel: lambda n, say: {"op": n.op, "backward": yes(n.backward)},
}
