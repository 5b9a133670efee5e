"""inference-train-mode in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.inference_train_mode import InferenceTrainMode, TrainingOp

TITLE = "Inference runs with the model in train(): dropout and batch norm act as in training"


def _what(r: InferenceTrainMode) -> str:
    parts = []
    if r.dropouts_per_step:
        parts.append(f"{r.dropouts_per_step:.0f} dropouts a step still drop (their outputs are random)")
    if r.attention_dropouts_per_step:
        parts.append(f"{r.attention_dropouts_per_step:.0f} scaled_dot_product_attention calls a step drop attention "
                     f"weights (dropout_p={r.attention_dropout_p:g})")
    if r.batch_norms_per_step:
        parts.append(f"{r.batch_norms_per_step:.0f} batch norms a step normalise with the batch's own statistics and "
                     "overwrite their running mean and variance")
    return " and ".join(parts)


def message(r: InferenceTrainMode) -> str:
    lead = ("The trace holds no ProfilerStep and no backward (if the program trains and its backward ran outside the "
            "profiled window, this does not apply)" if not r.has_steps else
            "No step runs a backward" if r.steps == r.of_steps
            else f"{r.steps} of the {r.of_steps} steps run no backward")
    wrong = ("The outputs are wrong, not only slower." if r.has_steps else
             "If this window is inference, its outputs are wrong, not only slower; nothing in it says which.")
    return (f"{lead}, yet the model is in training mode: {_what(r)}. {wrong} "
            f"The training-only kernels take {t(r.kernel_us_per_step)} of GPU time a step{_idle(r)}.")


def _idle(r: InferenceTrainMode) -> str:
    if not r.idle_us_per_step:
        return ""
    what = " and ".join(w for w, n in (("the dropouts", r.dropouts_per_step),
                                       (f"{r.counter_updates_per_step:.0f} num_batches_tracked updates",
                                        r.counter_updates_per_step)) if n)
    return f", and the GPU idles {t(r.idle_us_per_step)} a step while {what} dispatch"


def advice(r: InferenceTrainMode) -> str:
    sdpa = (" Once eval() sets dropout_p to 0, scaled_dot_product_attention may pick cuDNN attention, which builds a "
            "graph for every new sequence length (cudnn-setup): pin it to flash/efficient with "
            "torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])."
            if r.attention_not_cudnn else "")
    return ("Call model.eval() before the inference loop (and model.train() before training resumes); "
            "torch.inference_mode() and torch.no_grad() do not switch dropout or batch norm off." + sdpa)


def fix(r: InferenceTrainMode) -> str:
    sdpa = (", and pin SDPA to flash/efficient (sdpa_kernel): with dropout_p=0 it may pick cuDNN attention"
            if r.attention_not_cudnn else "")
    grad = " and run it under torch.inference_mode() (inference-grad-mode)" if r.grad_mode else ""
    return f"the model runs inference in train() mode ({_modules(r)}): call model.eval(){grad} first{sdpa}."


def _modules(r: InferenceTrainMode) -> str:
    parts = [w for w, n in (("dropout", r.dropouts_per_step + r.attention_dropouts_per_step),
                            ("batch-norm statistics", r.batch_norms_per_step)) if n]
    return ", ".join(parts)


def basis(r: InferenceTrainMode) -> str:
    if not r.kernel_us_per_step and not r.idle_us_per_step:
        # review 4 (a CPU trace): '100% of the window the GPU is busy' and 'at least a warning' beside an info at 0%
        return ("the training-only work takes no GPU time here: the finding is for the outputs, which train mode "
                "makes wrong" + ("" if r.has_steps else " if this window is inference"))
    severity = ("; at least a warning, and first, as the outputs are wrong" if r.has_steps
                else "; information only: without steps the window may be a training forward")
    return (f"the GPU time of the kernels only training mode runs (dropout's, batch norm's statistics), times the "
            f"{100 * r.busy_share:.0f}% of the window the GPU is busy, plus the GPU idle while the dropouts and batch "
            f"norm's num_batches_tracked updates dispatch{severity}")


NOTES = {
    TrainingOp: lambda n: {"dropout": "dropout that drops (train mode)", "attention": "attention with dropout_p > 0 (train mode)"}.get(n.kind, "batch norm in training mode"),
}
