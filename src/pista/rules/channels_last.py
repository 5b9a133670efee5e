"""The channels-last rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
channels-last`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/channels_last.ftl."""

from __future__ import annotations

import re

import numpy as np

from pista.findings import Context, Finding, Record
from pista.purpose import CODE, classify
from pista.query import pattern_mask
from pista.rules._common import device_ns_in_window, evidence, index_mask, kernels, short_name, us
from pista.rules._train_mode import training_kernels
from pista.timeline import Edit
from pista.trace.facts import Facts

ID = "channels-last"
# The NCHW path's kernels, by kind, and the share of their time channels_last keeps, from the H200
# twins (bf16, the same model and batch both ways): cuDNN's transposes vanish; ResNet-50's batch norm
# 14447 -> 6379 µs per step (0.44; MobileNetV3's 0.21: the smaller saving is taken); MobileNetV3's
# depthwise convolutions 13130 µs against 3867 µs for every convolution in channels_last (0.30 at
# most); ResNet-50's max pooling 780 -> 671 µs (0.86).
KINDS = (
    # cuDNN 9's generic layout conversion (`cudnn::engines_precompiled::convertTensor_kernel`, 17-18% of the GPU
    # time on two RTX 4090 traces of NCHW models, issue 34) is the same transpose under another name
    ("transpose", re.compile(r"nchwToNhwcKernel|nhwcToNchwKernel|cudnn::engines_precompiled::convertTensor_kernel"),
     0.0),
    ("batch norm", re.compile(r"^(void )?at::native::batch_norm_(backward|collect_statistics|transform_input)_kernel<"
                              r"|bn_fw_tr_1C11_kernel_NCHW|bn_bw_1C11_(kernel_new|singleread)|bn_fw_tr_1C11_singleread"),
     0.44),
    ("depthwise conv", re.compile(r"conv_depthwise2d_(forward|backward|grad_weight)_kernel"), 0.30),
    ("pooling", re.compile(r"pool\w*_nchw"), 0.86),
)
# Convolutions must be at least this share of the GPU time: batch norm over (N, C) in an MLP runs the
# same kernels, and channels_last is for 4-D activations.
MIN_CONV_SHARE = 0.05
# cuDNN's fp32 convolutions on the CUDA cores (no tensor cores: Volta and Turing in fp32, any card with TF32
# off): the NHWC gain is a tensor-core gain, not shown there (kineto's fp32 ResNet-50 on V100s: the replay of
# channels_last gave -1.19 ms on kineto_resnet50_w0_2021); mixed precision comes first (fp32-gemm's).
SIMT_CONV = re.compile(r"scudnn|sgemm|_ffma_|_simt_", re.I)
# ...where they hold more than this share of the convolutions' time.
MAX_SIMT_CONV_SHARE = 0.5
MIN_STEP_SHARE = 0.01  # REVIEW.md: under 1% of the step is noise
EVIDENCE_KINDS = 3


class NchwKernels(Record):
    """The NCHW path's kernels of one kind."""

    kind: str  # transpose | batch norm | depthwise conv | pooling
    per_step: float  # calls
    us_per_step: float
    keep: float  # the share of their time channels_last keeps (the twins')
    kernel: str  # the longest one's short name


class ChannelsLast(Record):
    steps: int
    kernel_us: float  # per step, every NCHW-path kernel
    gpu_share_percent: float  # of the GPU time in the window
    conv_share_percent: float  # the convolutions' share of the GPU time
    gpu_saved_us: float  # per step, what channels_last would not spend
    busy_percent: float  # the window's GPU busy share, which scales it to the impact
    kinds: tuple[NchwKernels, ...]  # most time first


class NchwNote(Record):
    """Note on one NCHW-path kernel."""

    kind: str


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    found = _nchw_kernels(facts) if facts.has_gpu else None
    if found is None:
        return []
    trace = facts.trace
    kinds, conv_ns = found
    steps = ctx.step_count
    saved = sum(float(trace.dur[idx].sum()) * (1.0 - keep) for _, idx, keep in kinds)
    busy = ctx.busy_share
    impact = ctx.per_step(saved * busy)
    if impact.share < MIN_STEP_SHARE:
        return []
    device_ns = device_ns_in_window(facts)
    groups = sorted((NchwKernels(kind, idx.size / steps, us(trace.dur[idx].sum()) / steps, keep,
                                 short_name(trace.event_name(int(idx[np.argmax(trace.dur[idx])]))))
                     for kind, idx, keep in kinds), key=lambda g: -g.us_per_step)
    total = sum(float(trace.dur[idx].sum()) for _, idx, _ in kinds)
    record = ChannelsLast(
        steps=steps, kernel_us=us(total) / steps, gpu_share_percent=100.0 * total / device_ns,
        conv_share_percent=100.0 * conv_ns / device_ns, gpu_saved_us=us(saved) / steps, busy_percent=100.0 * busy,
        kinds=tuple(groups))
    by_time = sorted(kinds, key=lambda f: -float(trace.dur[f[1]].sum()))[:EVIDENCE_KINDS]
    ev = [evidence(facts, int(idx[np.argmax(trace.dur[idx])]), NchwNote(kind)) for kind, idx, _ in by_time]
    idx = np.concatenate([i for _, i, _ in kinds]).astype(np.int64)
    dur = np.concatenate([trace.dur[i] * keep for _, i, keep in kinds])
    return [Finding(ID, record, impact, sorted(ev, key=lambda e: e.ts_us), edit=Edit("channels_last", device_dur=(idx, dur)))]


def _nchw_kernels(facts: Facts) -> tuple[list[tuple[str, np.ndarray, float]], float] | None:
    """The NCHW path's kernels in the steps by kind (KINDS: kind, kernels, the share of their time the fix keeps)
    and the convolutions' ns; None where the convolutions are too little of the device time, run fp32 on the CUDA
    cores (mixed precision first, then the layout), or convert no layout (NHWC already, or no cuDNN)."""
    trace = facts.trace
    # the kernels the steps launched (their GPU tail included), or the window's without steps
    in_window = kernels(facts) & ((facts.event_step >= 0) if facts.steps else
                                  (trace.ts >= facts.window[0]) & (trace.ts < facts.window[1]))
    # kernels only training mode runs in inference are inference-train-mode's: eval() removes them
    in_window &= ~index_mask(facts, training_kernels(facts))
    conv = in_window & (classify(facts) == CODE["conv"])
    conv_ns = float(trace.dur[conv].sum())
    if conv_ns < MIN_CONV_SHARE * device_ns_in_window(facts) \
            or float(trace.dur[conv & pattern_mask(facts, SIMT_CONV)].sum()) > MAX_SIMT_CONV_SHARE * conv_ns:
        return None
    found = [(kind, np.flatnonzero(in_window & pattern_mask(facts, pattern)), keep) for kind, pattern, keep in KINDS]
    found = [(kind, idx, keep) for kind, idx, keep in found if idx.size]
    return (found, conv_ns) if any(kind == "transpose" for kind, _, _ in found) else None
