"""tanh-gelu: the arguments of its text (ftl/<lang>/tanh_gelu.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.tanh_gelu import ChainOp, TanhGelu


def args(r: TanhGelu, say: Say) -> dict[str, str]:
    return {
        "chains": f"{r.chains_per_step:.0f}", "ops": str(r.ops_per_chain), "fp32": yes(r.fp32),
        "kernel_us": t(r.kernel_us_per_step), "idle_us": t(r.idle_us_per_step),
    }


NOTES = {
    ChainOp: lambda n, say: {"position": str(n.position), "of": str(n.of)},
}
