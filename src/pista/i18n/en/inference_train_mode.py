"""inference-train-mode in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.inference_train_mode import InferenceTrainMode, TrainingOp

TITLE = "Inference runs with the model in train(): dropout and batch norm act as in training"


def _what(r: InferenceTrainMode) -> str:
    parts = []
    if r.dropouts_per_step:
        parts.append(f"{r.dropouts_per_step:.0f} dropouts a step still drop (their outputs are random)")
    if r.batch_norms_per_step:
        parts.append(f"{r.batch_norms_per_step:.0f} batch norms a step normalise with the batch's own statistics and "
                     "overwrite their running mean and variance")
    return " and ".join(parts)


def message(r: InferenceTrainMode) -> str:
    lead = "No step runs a backward" if r.steps == r.of_steps else f"{r.steps} of the {r.of_steps} steps run no backward"
    return (f"{lead}, yet the model is in training mode: {_what(r)}. The outputs are wrong, not only slower. "
            f"The training-only kernels take {t(r.kernel_us_per_step)} of GPU time a step{_idle(r)}.")


def _idle(r: InferenceTrainMode) -> str:
    return f", and the GPU idles {t(r.idle_us_per_step)} a step while the dropouts dispatch" if r.idle_us_per_step else ""


def advice(r: InferenceTrainMode) -> str:
    return ("Call model.eval() before the inference loop (and model.train() before training resumes); "
            "torch.inference_mode() and torch.no_grad() do not switch dropout or batch norm off.")


def fix(r: InferenceTrainMode) -> str:
    return "the model runs inference in train() mode (dropout, batch-norm statistics): call model.eval() first."


def basis(r: InferenceTrainMode) -> str:
    return (f"the GPU time of the kernels only training mode runs (dropout's, batch norm's statistics), times the "
            f"{100 * r.busy_share:.0f}% of the window the GPU is busy, plus the GPU idle under the dropouts while they "
            "dispatch; at least a warning, as the outputs are wrong")


NOTES = {
    TrainingOp: lambda n: "dropout that drops (train mode)" if n.kind == "dropout" else "batch norm in training mode",
}
