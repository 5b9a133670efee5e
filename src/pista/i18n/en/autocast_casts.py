"""autocast-casts in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.autocast_casts import AutocastCasts, GradCast, WeightCast

TITLE = "autocast casts the same fp32 weights every step"

_DTYPE = {"float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16", "double": "fp64"}


def dtype(name: str) -> str:
    return _DTYPE.get(name, name or "?")


def shape(s: tuple[int, ...]) -> str:
    return "x".join(map(str, s)) or "scalar"


def _shapes(r: AutocastCasts) -> str:
    return ", ".join(f"{shape(s.shape)} {s.per_step:.0f}x {t(s.us)}" for s in r.shapes)


def _target(r: AutocastCasts) -> str:
    return dtype(r.target_dtype) if r.target_dtype else "bf16"


def message(r: AutocastCasts) -> str:
    return (f"{r.weights} {dtype(r.source_dtype)} weights and biases of {', '.join(r.ops)} are cast to {_target(r)} "
            f"every step and their gradients cast back: {r.casts_per_step:.0f} cast kernels per step take "
            f"{t(r.weight_us)} ({t(r.forward_us)} forward, {t(r.backward_us)} backward), "
            f"{r.weight_share_percent:.1f}% of the GPU time (per step by shape: {_shapes(r)}), and the host spends "
            f"{t(r.host_us)} per step dispatching them, {t(r.exposed_host_us)} of it with the GPU idle: "
            f"{r.step_share_percent:.1f}% of the step in all. All cast kernels take {t(r.cast_us)} per step "
            f"({r.cast_share_percent:.1f}% of the GPU time); the other {t(r.other_cast_us)} are activations and "
            "explicit .to()/.float() calls.")


def advice(r: AutocastCasts) -> str:
    return (f"Keep the weights in {_target(r)}: model.to(torch.{'float16' if _target(r) == 'fp16' else 'bfloat16'}) "
            "with an fp32 master copy of the parameters in the optimizer, so no cast runs in the forward pass and no "
            "gradient is cast back; or torch.compile the model, which fuses the casts into their neighbours. "
            "Running the whole model in that dtype without autocast also removes the activation casts around "
            "fp32 ops.")


def fix(r: AutocastCasts) -> str:
    return (f"autocast casts {r.weights} weights of {', '.join(r.ops)} every step, {t(r.weight_us)} of cast kernels and "
            f"{t(r.exposed_host_us)} of exposed host dispatch per step with their gradients: keep the weights in "
            f"{_target(r)} (model.to(...), fp32 master in the optimizer)")


def basis(r: AutocastCasts) -> str:
    return ("the weight casts' kernel time per step, forward and backward, times the GPU's busy share (a host-bound "
            "step hides the rest), plus the host time of their cast ops with the GPU idle; the casts alone: bf16 parameters also make the fp32 ops around them cheaper (the GPT "
            "of REVIEW.md: 11.8 -> 8.8 ms a step unprofiled, its casts 1.95 -> 1.10 ms)")


NOTES = {
    WeightCast: lambda n: f"cast of a {shape(n.shape)} weight for {n.op}, kernel {t(n.kernel_us)}",
    GradCast: lambda n: f"its {shape(n.shape)} gradient cast back, kernel {t(n.kernel_us)}",
}
