"""channels-last in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.channels_last import ChannelsLast, NchwKernels, NchwNote

TITLE = "A convnet runs in NCHW: cuDNN transposes around each convolution"


def _kind(k: NchwKernels) -> str:
    return f"{k.kind} {t(k.us_per_step)} ({k.per_step:.0f} kernels, e.g. {k.kernel})"


def message(r: ChannelsLast) -> str:
    return (f"The convolutions ({r.conv_share_percent:.0f}% of the GPU time) run on NCHW tensors, and the NCHW "
            f"path costs {t(r.kernel_us)} of GPU time per step ({r.gpu_share_percent:.0f}%): "
            + "; ".join(_kind(k) for k in r.kinds)
            + f". In channels_last the transposes go and the rest runs on faster kernels: about {t(r.gpu_saved_us)} "
            "less GPU time per step.")


def advice(r: ChannelsLast) -> str:
    return ("Convert the model and its input to channels_last: model = model.to(memory_format=torch.channels_last) "
            "once, and x = x.to(memory_format=torch.channels_last) for each batch (or in the DataLoader's collate "
            "function). cuDNN then runs the convolutions on NHWC tensors directly, and batch norm, pooling and "
            "depthwise convolutions take their channels_last kernels.")


def fix(r: ChannelsLast) -> str:
    return (f"The model runs in NCHW: cuDNN transposes around its convolutions and {t(r.kernel_us)} of NCHW kernels "
            "run per step: convert the model and its input with .to(memory_format=torch.channels_last).")


def basis(r: ChannelsLast) -> str:
    per = "per step" if r.steps > 1 else "over the window"
    return (f"the transposes' time plus each NCHW kernel's time times what channels_last does not keep of it (the "
            f"H200 twins' ratios) ({t(r.gpu_saved_us)} of GPU time {per}), times the {r.busy_percent:.0f}% of the "
            "window the GPU is busy: GPU time saved shortens the step only where the GPU is the limit")


NOTES = {
    NchwNote: lambda n: f"NCHW path: {n.kind}",
}
