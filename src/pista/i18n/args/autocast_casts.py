"""autocast-casts: the arguments of its text (ftl/<lang>/autocast_casts.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.autocast_casts import AutocastCasts, GradCast, WeightCast

# dtypes as torch records them, as pista names them
_DTYPE = {"float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16", "double": "fp64"}


def dtype(name: str) -> str:
    return _DTYPE.get(name, name or "?")


def shape(s: tuple[int, ...]) -> dict[str, str]:
    """A shape's arguments: `shape` in the catalogue writes 4096x1024, or a scalar in words."""
    return {"shape": "x".join(map(str, s)), "has_shape": yes(s)}


def args(r: AutocastCasts, say: Say) -> dict[str, str]:
    target = dtype(r.target_dtype) if r.target_dtype else "bf16"
    return {
        "weights": str(r.weights), "source": dtype(r.source_dtype), "ops": ", ".join(r.ops), "target": target,
        "torch_dtype": "float16" if target == "fp16" else "bfloat16",
        "casts": f"{r.casts_per_step:.0f}", "weight_us": t(r.weight_us), "forward_us": t(r.forward_us),
        "backward_us": t(r.backward_us), "weight_share": f"{r.weight_share_percent:.1f}",
        "shapes": ", ".join(say("shape-item", **shape(s.shape), per_step=f"{s.per_step:.0f}", us=t(s.us))
                            for s in r.shapes),
        "host_us": t(r.host_us), "exposed_host_us": t(r.exposed_host_us), "share": f"{r.step_share_percent:.1f}",
        "cast_us": t(r.cast_us), "cast_share": f"{r.cast_share_percent:.1f}", "other_cast_us": t(r.other_cast_us),
    }


NOTES = {
    WeightCast: lambda n, say: {**shape(n.shape), "op": n.op, "kernel_us": t(n.kernel_us)},
    GradCast: lambda n, say: {**shape(n.shape), "kernel_us": t(n.kernel_us)},
}
