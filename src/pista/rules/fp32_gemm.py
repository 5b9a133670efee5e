"""The fp32-gemm rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
fp32-gemm`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/fp32_gemm.ftl."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import numpy as np

from pista.efficiency import card_of, compute_major, device_name, gemms, tf32_gains
from pista.findings import Context, Finding, Record
from pista.query import nearest_ancestor, pattern_mask
from pista.rules._common import evidence, kernels, op_dims, us
from pista.timeline import Edit
from pista.trace.facts import Facts
from pista.trace.model import Trace

ID = "fp32-gemm"
# Where the replay finds the step does not wait for these GEMMs, the finding stays as information (pista.engine).
KEEP_OFF_PATH = True
# Share of all device work time in SIMT fp32 GEMM kernels at or above which the rule fires:
# gpu/fp32_gemm ~100%; gpu/recompile runs fp32 SIMT GEMMs too, but 14 µs of 19 ms (0.07%).
MIN_DEVICE_SHARE = 0.05
# ... and the saving must reach this share of the step (REVIEW.md: under ~1% is noise).
MIN_STEP_SHARE = 0.01
# Without the card in the peak table (and no compute capability to go by): TF32 assumed this many
# times faster than full fp32, as measured on the H200 (355.2 / 50.9 TFLOP/s; the A100's datasheet
# says 156 / 19.5 = 8).
UNKNOWN_CARD_TF32_SPEEDUP = 7.0
# A GeForce card the table lacks (RTX 3060, 4060 ...): TF32 runs at the fp32 rate there and fp16/bf16
# with fp32 accumulation at twice it (GA102 whitepaper: RTX 3090 71 / 35.6; Ada whitepaper: RTX 4090
# 165.2 / 82.6 TFLOP/s).
GEFORCE_BF16_SPEEDUP = 2.0
GEFORCE = re.compile(r"GeForce|\bRTX \d{4}", re.I)
# A workstation Ampere (GA10x, compute capability 8.6: RTX A4000-A6000) the table lacks: dense TF32 runs at twice
# the CUDA cores' fp32 rate there, not the data-centre parts' 7-8x (GA102 whitepaper: RTX A6000 38.7 fp32, 77.4
# TF32 TFLOP/s); review 4's a4000_sevit_warm on an RTX A4000 was priced at the H200's 7x.
GA10X_TF32_SPEEDUP = 2.0
# Without deviceProperties (torch 1.8's traces: kineto's resnet50 samples, a V100 by their kernels
# 'volta_sgemm_128x64_nn'), cuBLAS's and cuDNN's kernel names say the architecture they were built for:
# the newest named is taken as the card's.
ARCH_PREFIX = re.compile(r"^(kepler|maxwell|pascal|volta|turing|ampere|sm(\d\d))_", re.I)
ARCH_MAJOR = {"kepler": 3, "maxwell": 5, "pascal": 6, "volta": 7, "turing": 7, "ampere": 8}
# Tensor cores came with Volta (7.x, fp16 only), TF32 with Ampere (8.0).
TENSOR_CORE_MAJOR = 7
TF32_MAJOR = 8
EVIDENCE_EVENTS = 3

# fp32 GEMM kernels on the CUDA cores: cuBLAS sgemm/gemmSN, CUTLASS simt, cuBLAS xmma with ffma.
SIMT_FP32_GEMM = re.compile(r"sgemm|gemmSN|_simt_|_ffma_", re.I)
TENSOR_CORE = re.compile(r"tf32|bf16|f16|hmma|_h_", re.I)
# cuDNN's own fp32 convolution kernels (review 5's T4 ResNet-50 and VGG-16 traces: `cudnn_volta_scudnn_128x64_relu_
# medium_nn_v1`, `dgrad_alg1_engine<float, ...>`, `wgrad_alg1_engine<float, float, ...>`, `winograd_nonfused::
# winogradForwardData4x4<float, float>`, 58% of t4_resnet50_bottleneck's GPU time): counted on cards without TF32
# (before Ampere), where fp16 autocast moves the convolutions onto the tensor cores with the GEMMs; from Ampere on,
# cuDNN runs fp32 convolutions in TF32 unless torch.backends.cudnn.allow_tf32 was turned off.
FP32_CONV = re.compile(r"scudnn|(?:dgrad|wgrad|fprop)\w*engine<float|winograd\w*<float|convolve\w*<float|"
                       r"fft\w*<float", re.I)
# What a convolution kernel without FLOPs gains on the tensor cores: not the ceilings' ratio (8x on a T4), since
# cuDNN's layout, winograd and reduction passes stay; a public ResNet-50 table measures 2.3-3.1x from AMP on a V100
# (review 5). The lower bound of that, rounded down.
CONV_TENSOR_CORE_SPEEDUP = 2.0
GEMM_OPS = re.compile(r"^aten::(mm|addmm|bmm|baddbmm|addbmm|matmul|linear|_addmm_activation)$")


class Fp32Gemm(Record):
    kernels: int
    ops: tuple[str, ...]  # the GEMM and convolution ops that launched them, most kernel time first
    gemm_us: float  # over the window
    device_share_percent: float
    tflops: float | None  # achieved, over the calls with recorded shapes
    shape: tuple[int, int, int, int] | None  # batch, M, N, K of the longest call
    card: str | None
    target: str  # tf32 | bf16 | fp16: the precision to move to on this card
    target_tflops: float | None  # the card's ceiling in it (None: card unknown)
    target_measured: bool
    saved_us: float  # over the window
    steps: int
    assumed_speedup: float | None = None  # card unknown: the target's assumed speed over fp32
    geforce: bool = False  # a GeForce card: TF32 no faster than fp32 there
    conv_kernels: int = 0  # of them, cuDNN's SIMT GEMMs for convolutions (volta_sgemm under aten::cudnn_convolution)
    gpu_busy_percent: float = 0.0  # of the window, the busiest GPU's
    host_bound: bool = False  # the verdict is overhead-bound: the host's dispatch sets the pace (overhead-bound's)
    # set by the engine: the replay of the steps with the GEMMs at the target saves nothing (the host sets the pace)
    off_path: bool = False

    def off_critical_path(self) -> Fp32Gemm | None:
        """This record where the replay saves the step nothing (pista.engine): kept, as information, unless the
        verdict is overhead-bound, whose finding says where the step goes (gpu/recompile_limit: 68 µs of fp32
        GEMMs with the GPU busy 9%)."""
        return None if self.host_bound else msgspec.structs.replace(self, off_path=True)


class SimtKernel(Record):
    """Note on an fp32 SIMT GEMM kernel."""

    tflops: float | None


class FloatOp(Record):
    """Note on the op that launched it."""

    dims: tuple[tuple[int, ...], ...]


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    trace = facts.trace
    card = card_of(trace)
    major = card.compute_major if card else compute_major(trace)
    if major is None:
        major = _major_from_kernels(facts)
    if major is not None and major < TENSOR_CORE_MAJOR:
        return []  # Pascal and older: no tensor cores to move to
    found = _simt_kernels(facts)
    if found is None:
        return []
    idx, ops = found
    device_ns = float(trace.dur[facts.is_device_work].sum())
    gemm_ns = float(trace.dur[idx].sum())
    share = gemm_ns / device_ns if device_ns else 0.0
    if share < MIN_DEVICE_SHARE:
        return []
    props = trace.device_properties[0] if trace.device_properties else {}
    target, speedup = _target(card, major, device_name(trace) or "", (props.get("computeMajor"), props.get("computeMinor")))
    target_tflops = card.ceiling(target) if card else None
    target_ns = _target_ns(facts, idx, card, target_tflops, speedup)
    saved = float((trace.dur[idx] - target_ns).sum())
    impact = ctx.per_step(saved)
    if impact.share < MIN_STEP_SHARE:
        return []
    record = _record(ctx, idx, ops, card, target, speedup, gemm_ns, share, saved)
    edit = Edit("GEMMs at the target dtype", device_dur=(idx.astype(np.int64), target_ns))
    return [Finding(ID, record, impact, _evidence(facts, idx, ops), edit=edit)]


def _record(ctx: Context, idx: np.ndarray, ops: np.ndarray, card, target: str, speedup: float, gemm_ns: float,
            share: float, saved: float) -> Fp32Gemm:
    facts = ctx.facts
    trace = facts.trace
    conv = _conv_ops(facts, idx, ops)
    tflops, shape = _rated(facts, idx)
    return Fp32Gemm(
        kernels=int(idx.size), conv_kernels=_conv_count(facts, idx, conv), ops=_ops_by_time(trace, idx, ops, conv),
        gemm_us=us(gemm_ns), device_share_percent=100.0 * share, tflops=tflops, shape=shape,
        **_card_fields(card, target, device_name(trace)),
        saved_us=us(saved), steps=ctx.step_count, assumed_speedup=None if card else speedup,
        geforce=bool(GEFORCE.search(device_name(trace) or "")),
        gpu_busy_percent=100.0 * (ctx.summary.gpu_busy_share or 0.0), host_bound=ctx.summary.host_bound)


def _rated(facts: Facts, idx: np.ndarray) -> tuple[float | None, Any]:
    """The rated kernels' achieved TFLOP/s together, and the longest one's (M, N, K); None for either unknown."""
    trace = facts.trace
    rated = [g for i in idx.tolist() if (g := gemms(facts).get(int(i))) is not None]
    if not rated:
        return None, None
    rated_ns = sum(int(trace.dur[g.kernel]) for g in rated)
    longest = max(rated, key=lambda g: int(trace.dur[g.kernel]))
    return (sum(g.flops for g in rated) / rated_ns / 1e3 if rated_ns else None), longest.mnk


def _ops_by_time(trace: Trace, idx: np.ndarray, ops: np.ndarray, conv: list[str]) -> tuple[str, ...]:
    """The GEMM (or convolution) ops that launched the kernels, most kernel time first."""
    by_time: dict[str, int] = {}
    for o, c, d in zip(ops.tolist(), conv, trace.dur[idx].tolist(), strict=True):
        name = trace.event_name(int(o)) if o >= 0 else c
        if name:
            by_time[name] = by_time.get(name, 0) + int(d)
    return tuple(sorted(by_time, key=lambda n: (-by_time[n], n)))


def _card_fields(card, target: str, device: str | None) -> dict[str, Any]:
    """The record's card, the target dtype and its ceiling (None and False on a card pista has no figures for)."""
    if not card:
        return {"card": device, "target": target, "target_tflops": None, "target_measured": False}
    return {"card": card.name, "target": target, "target_tflops": card.ceiling(target),
            "target_measured": bool(card.ceiling_measured(target))}


def _conv_ops(facts: Facts, idx: np.ndarray, ops: np.ndarray) -> list[str]:
    """Per kernel without a GEMM op above it: the convolution op that launched it ("" otherwise): cuDNN runs
    convolutions as SIMT GEMMs too (volta_sgemm under aten::cudnn_convolution and convolution_backward in
    kineto's fp32 ResNet-50 traces), and autocast moves them onto the tensor cores the same way."""
    trace = facts.trace
    out = []
    for i, op in zip(idx.tolist(), ops.tolist(), strict=True):
        owner = int(facts.owner[i])
        name = trace.event_name(owner) if op < 0 and owner >= 0 else ""
        out.append(name if "conv" in name else "")
    return out


def _conv_count(facts: Facts, idx: np.ndarray, conv: list[str]) -> int:
    """The kernels that run convolutions: launched by a convolution op, or cuDNN's own fp32 convolution kernels."""
    named = pattern_mask(facts, FP32_CONV)[idx]
    return int((np.array([bool(c) for c in conv], dtype=bool) | named).sum())


def _simt_kernels(facts: Facts) -> tuple[np.ndarray, np.ndarray] | None:
    """The fp32 SIMT GEMM kernels whose op takes float inputs (or does not say), each with the GEMM op that
    launched it (-1: none found); None without any."""
    k = kernels(facts)
    simt = k & pattern_mask(facts, SIMT_FP32_GEMM) & ~pattern_mask(facts, TENSOR_CORE)
    if _before_tf32(facts):
        simt |= k & pattern_mask(facts, FP32_CONV) & ~pattern_mask(facts, TENSOR_CORE)
    if not simt.any():
        return None
    idx = np.flatnonzero(simt)
    # the GEMM op that launched each kernel (its External-id owner or the nearest GEMM op above it)
    gemm_op = nearest_ancestor(facts, facts.is_host & pattern_mask(facts, GEMM_OPS))
    ops = np.where(facts.owner[idx] >= 0, gemm_op[np.maximum(facts.owner[idx], 0)], -1)
    # without record_shapes an op has no `Input type`: the SIMT fp32 kernel's name is enough
    # (gpu/compile_float_arg: inductor's extern mm/addmm, 74% of the GPU time, no shapes recorded)
    keep = np.array([op < 0 or _float_or_unknown(facts, int(op)) for op in ops.tolist()], dtype=bool)
    if not keep.any():
        return None
    return idx[keep], ops[keep]


def _before_tf32(facts: Facts) -> bool:
    """Whether the card has tensor cores but no TF32 (V100, Turing), by its table entry or its kernels' names."""
    card = card_of(facts.trace)
    major = card.compute_major if card else (compute_major(facts.trace) or _major_from_kernels(facts))
    return major is not None and TENSOR_CORE_MAJOR <= major < TF32_MAJOR


def _evidence(facts: Facts, idx: np.ndarray, ops: np.ndarray) -> list:
    """The longest kernels, each with its achieved TFLOP/s, and the op that launched it with its shapes."""
    trace = facts.trace
    table = gemms(facts)
    ev = []
    for pos in np.argsort(-trace.dur[idx], kind="stable")[:EVIDENCE_EVENTS].tolist():
        i, op = int(idx[pos]), int(ops[pos])
        g = table.get(i)
        ev.append(evidence(facts, i, SimtKernel(g.tflops(int(trace.dur[i])) if g else None)))
        if op >= 0 and all(e.ts_us != trace.ts[op] / 1000.0 for e in ev):
            ev.append(evidence(facts, op, FloatOp(op_dims(facts, op))))
    return ev


def _major_from_kernels(facts: Facts) -> int | None:
    """The compute capability's major the kernels' names were built for (the newest named), or None."""
    trace = facts.trace
    majors = []
    for n in np.unique(trace.name[kernels(facts)]).tolist():
        m = ARCH_PREFIX.match(trace.names[int(n)])
        if m:
            majors.append(int(m.group(2)) // 10 if m.group(2) else ARCH_MAJOR[m.group(1).lower()])
    return max(majors) if majors else None


def _target(card, major: int | None, name: str, capability: tuple[object, object] | None = None) -> tuple[str, float]:
    """The precision to move the GEMMs to on this card, and (for a card the table lacks) how much
    faster than fp32 it is assumed to run."""
    if card:
        if tf32_gains(card):
            return "tf32", UNKNOWN_CARD_TF32_SPEEDUP
        # TF32 there but no faster (GeForce): bf16; no TF32 at all (V100, T4, CDNA 2): fp16 as before
        return ("bf16" if card.has_tf32 else "fp16"), GEFORCE_BF16_SPEEDUP
    if major is not None and major < TF32_MAJOR:
        return "fp16", UNKNOWN_CARD_TF32_SPEEDUP
    if GEFORCE.search(name):
        return "bf16", GEFORCE_BF16_SPEEDUP
    if capability == (8, 6):
        return "tf32", GA10X_TF32_SPEEDUP
    return "tf32", UNKNOWN_CARD_TF32_SPEEDUP


def _target_ns(facts: Facts, idx: np.ndarray, card, target_tflops: float | None, speedup: float) -> np.ndarray:
    """Per kernel: its time at the target dtype, never longer than now: its FLOPs at the target ceiling; a call
    without FLOPs (or on a card not in the table) at the card's fp32-to-target ratio."""
    trace = facts.trace
    table = gemms(facts)
    fp32 = card.ceiling("fp32") if card else None
    ratio = fp32 / target_tflops if fp32 and target_tflops else 1.0 / speedup
    conv = pattern_mask(facts, FP32_CONV)
    out = np.empty(idx.size, dtype=np.float64)
    for k, i in enumerate(idx.tolist()):
        dur = float(trace.dur[i])
        g = table.get(int(i))
        if g is not None and target_tflops:
            out[k] = min(dur, g.flops / (target_tflops * 1e3))
        elif conv[i]:
            out[k] = dur * max(min(1.0, ratio), 1.0 / CONV_TENSOR_CORE_SPEEDUP)
        else:
            out[k] = dur * min(1.0, ratio)
    return out


def _float_or_unknown(facts: Facts, op: int) -> bool:
    types = facts.trace.args(op).get("Input type")
    return not isinstance(types, list) or any("float" in str(t) for t in types)
