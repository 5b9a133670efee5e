"""inference-train-mode: the arguments of its text (ftl/<lang>/inference_train_mode.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, step_lead, yes
from pista.i18n._fmt import t
from pista.rules.inference_train_mode import InferenceTrainMode, TrainingOp


def _what(r: InferenceTrainMode, say: Say) -> str:
    """What runs in training mode: the dropouts, SDPA's attention dropout, the batch norms (those there are)."""
    parts = []
    if r.dropouts_per_step:
        parts.append(say("dropouts-item", n=f"{r.dropouts_per_step:.0f}"))
    if r.attention_dropouts_per_step:
        parts.append(say("attention-item", n=f"{r.attention_dropouts_per_step:.0f}", p=f"{r.attention_dropout_p:g}"))
    if r.batch_norms_per_step:
        parts.append(say("batch-norms-item", n=f"{r.batch_norms_per_step:.0f}"))
    return say("and").join(parts)


def _dispatched(r: InferenceTrainMode, say: Say) -> str:
    """What dispatches while the GPU idles: the dropouts, batch norm's counter updates."""
    parts = []
    if r.dropouts_per_step:
        parts.append(say("idle-dropouts-item"))
    if r.counter_updates_per_step:
        parts.append(say("idle-counters-item", n=f"{r.counter_updates_per_step:.0f}"))
    return say("and").join(parts)


def _modules(r: InferenceTrainMode, say: Say) -> str:
    parts = []
    if r.dropouts_per_step + r.attention_dropouts_per_step:
        parts.append(say("dropout-module-item"))
    if r.batch_norms_per_step:
        parts.append(say("batch-norm-module-item"))
    return ", ".join(parts)


def args(r: InferenceTrainMode, say: Say) -> dict[str, str]:
    return {
        "lead": step_lead(r.has_steps, r.steps, r.of_steps), "steps": str(r.steps), "of_steps": str(r.of_steps), "has_steps": yes(r.has_steps),
        "what": _what(r, say), "kernel_us": t(r.kernel_us_per_step), "idle": yes(r.idle_us_per_step),
        "idle_us": t(r.idle_us_per_step), "dispatched": _dispatched(r, say), "sdpa": yes(r.attention_not_cudnn),
        "grad": yes(r.grad_mode), "modules": _modules(r, say),
        "gpu_time": yes(r.kernel_us_per_step or r.idle_us_per_step), "busy": f"{100 * r.busy_share:.0f}",
        "cpu": yes(r.cpu_us_per_step), "cpu_us": t(r.cpu_us_per_step),
        "bn_saving": f"{100 * r.batch_norm_saving:.0f}",
    }


NOTES = {
    TrainingOp: lambda n, say: {"kind": key(n.kind)},
}
