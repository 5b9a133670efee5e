"""How well GEMM kernels run against the card: FLOPs from the launching op's recorded shapes, the
card's datasheet peaks and its practical ceilings. numpy only (no torch, no pandas).

- `CARDS`: datasheet dense peaks per GPU (TFLOP/s per dtype, HBM TB/s), each with its source;
  `card_of(trace)` picks one by the trace's `deviceProperties` name.
- `Card.ceiling(dtype)`: what the card really reaches. Measured where we measured it (the H200 in
  `shared/traces/README.md`), else the datasheet times the share the H200 reached of its own.
- `gemm_flops(op, dims)`: 2*M*N*K (times the batch) for aten::mm, addmm, bmm, baddbmm, addbmm,
  matmul, linear, _scaled_mm, _addmm_activation, from the op's `Input Dims`.
- `gemms(facts)`: per GEMM kernel call, its FLOPs, dtype and rate; `rate(facts, kernels)` sums a
  group of calls; `headroom_ns(facts, kernels)` is the time above the card's ceiling.

A GEMM op call's FLOPs go to the longest kernel it launched (the GEMM; a split-K reduction or a
cuBLAS memset beside it gets none). Kernels launched by anything but a GEMM op (Triton templates,
cuDNN, attention) have no FLOPs here.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from pista.errors import UsageError
from pista.opargs import OpArgs, op_args
from pista.purpose import CODE, PURPOSES, classify
from pista.trace.facts import Facts, per_facts
from pista.trace.model import Trace

DTYPES = ("fp8", "bf16", "fp16", "tf32", "fp32", "fp64")


@dataclass(frozen=True)
class Card:
    """One GPU's datasheet: dense (no 2:4 sparsity) TFLOP/s per dtype on its fastest unit for GEMMs
    (tensor cores where it has them; fp32 is the CUDA cores' rate), and HBM bandwidth. A dtype the
    card has no unit for is absent (no tf32 before Ampere, no fp8 before Hopper/Ada)."""

    name: str
    pattern: str  # regex matched against deviceProperties' name
    tflops: dict[str, float]
    hbm_tbps: float
    compute_major: int  # the architecture: 9 Hopper, 8 Ampere/Ada, 7 Volta/Turing, 10 Blackwell
    source: str
    measured: dict[str, float] = field(default_factory=dict)  # TFLOP/s per dtype, "hbm" in TB/s

    def peak(self, dtype: str | None) -> float | None:
        return self.tflops.get(dtype) if dtype else None

    def ceiling(self, dtype: str | None) -> float | None:
        """TFLOP/s a real GEMM can reach in this dtype: measured on this card, else estimated."""
        if dtype is None:
            return None
        if dtype in self.measured:
            return self.measured[dtype]
        peak = self.tflops.get(dtype)
        return None if peak is None else peak * PRACTICAL_SHARE[dtype]

    def ceiling_measured(self, dtype: str | None) -> bool:
        return dtype in self.measured

    @property
    def hbm_ceiling_tbps(self) -> float:
        """TB/s a streaming kernel or a device copy reaches (bytes read + written): measured, else estimated."""
        return self.measured.get("hbm", self.hbm_tbps * PRACTICAL_SHARE_HBM)

    @property
    def has_tf32(self) -> bool:
        return "tf32" in self.tflops


# Measured on the H200 of shared/traces/README.md (2026-12-03, triton.testing.do_bench medians of
# 8192^3 matmuls, copies of 2 GiB). Clocks and power move these by several percent from run to run
# (bf16 794.7 on 2026-12-02): seed_mm4096_warm's GEMM reached 803 TFLOP/s.
H200_MEASURED = {"bf16": 756.7, "fp16": 670.6, "fp8": 1267.2, "tf32": 355.2, "fp32": 50.9, "fp64": 56.0,
                 "hbm": 4.27}
H200_DATASHEET = {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.0, "fp32": 67.0, "fp64": 67.0}
H200_HBM_TBPS = 4.8
# On cards we have not measured, the ceiling is the datasheet times the share the H200 reached of
# its own datasheet in that dtype (an estimate, said so wherever a ceiling is shown).
PRACTICAL_SHARE = {d: H200_MEASURED[d] / H200_DATASHEET[d] for d in DTYPES}
PRACTICAL_SHARE_HBM = H200_MEASURED["hbm"] / H200_HBM_TBPS
# GEMM ceilings of the MI300X as published (see its entry in CARDS): bf16 and fp16 run at one rate there.
MI300X_MEASURED = {"bf16": 620.0, "fp16": 620.0, "fp8": 990.0}
# A call at or above this share of the ceiling runs as fast as the card allows: the measured
# ceilings move by ~5% from run to run (bf16 794.7 one day, 756.7 the next) and the seed GEMMs sit
# at 1.04-1.06 of it (seed_mm4096_warm 803, seed_mm4096_compile 784 TFLOP/s), gpu/tf32_gemm at 1.13.
AT_CEILING_SHARE = 0.9

CARDS: tuple[Card, ...] = (
    # NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200): sparse figures halved.
    Card("H200 NVL", r"H200 NVL", {"fp8": 1670.5, "bf16": 835.5, "fp16": 835.5, "tf32": 417.5, "fp32": 60.0,
                                   "fp64": 60.0}, 4.8, 9, "NVIDIA H200 datasheet (NVL), dense"),
    Card("H200 SXM", r"H200", dict(H200_DATASHEET), H200_HBM_TBPS, 9, "NVIDIA H200 datasheet (SXM), dense",
         dict(H200_MEASURED)),
    # NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100).
    Card("H100 NVL", r"H100 NVL", {"fp8": 1670.5, "bf16": 835.5, "fp16": 835.5, "tf32": 417.5, "fp32": 60.0,
                                   "fp64": 60.0}, 3.9, 9, "NVIDIA H100 datasheet (NVL), dense"),
    Card("H100 PCIe", r"H100.*PCIe", {"fp8": 1513.0, "bf16": 756.5, "fp16": 756.5, "tf32": 378.0, "fp32": 51.0,
                                      "fp64": 51.0}, 2.0, 9, "NVIDIA H100 datasheet (PCIe), dense"),
    Card("H100 SXM", r"H100|GH200", {"fp8": 1979.0, "bf16": 989.5, "fp16": 989.5, "tf32": 494.5, "fp32": 67.0,
                                     "fp64": 67.0}, 3.35, 9, "NVIDIA H100 datasheet (SXM), dense"),
    # NVIDIA HGX B200 specifications, per GPU (nvidia.com/en-us/data-center/hgx): sparse halved.
    Card("B200", r"B200", {"fp8": 4500.0, "bf16": 2250.0, "fp16": 2250.0, "tf32": 1100.0, "fp32": 75.0,
                           "fp64": 37.0}, 7.7, 10, "NVIDIA HGX B200 specifications (per GPU), dense"),
    # NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100): no fp8.
    Card("A100 80GB PCIe", r"A100.*80GB.*PCIe|A100-PCIE-80GB", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0,
                                                                "fp32": 19.5, "fp64": 19.5}, 1.935, 8,
         "NVIDIA A100 datasheet (80GB PCIe), dense"),
    # PG509 is the A100's SXM4 board: Meta's traces name it 'NVIDIA A100-PG509-200' (HTA's test traces:
    # 42,297,524,224 bytes, 108 SMs, compute 8.0: the 40 GB one); other names of it ('PG509-210') go by
    # card_of's fallback on the header's compute capability, SM count and memory.
    Card("A100 40GB", r"A100.*40GB|PG509-200", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5,
                                                "fp64": 19.5}, 1.555, 8, "NVIDIA A100 datasheet (40GB), dense"),
    Card("A100 SXM 80GB", r"A100", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5, "fp64": 19.5},
         2.039, 8, "NVIDIA A100 datasheet (80GB SXM), dense"),
    # GeForce (consumer) Ampere and Ada: their tensor cores run TF32, and fp16/bf16 with fp32 accumulation
    # (what torch's GEMMs use), at half the rate of the same chip's workstation cards, so TF32 is no faster
    # than the CUDA cores' fp32 and only fp16/bf16 doubles it. NVIDIA Ampere GA102 GPU Architecture
    # whitepaper, Appendix A (RTX 3090: peak FP32 35.6, TF32 tensor 35.6, FP16/BF16 tensor with FP32
    # accumulate 71 dense TFLOP/s, 936 GB/s; RTX 3080: 29.8, 29.8, 59.5, 760 GB/s); NVIDIA Ada GPU
    # Architecture whitepaper, Appendix A (RTX 4090: FP32 82.6, TF32 82.6, FP16/BF16 with FP32 accumulate
    # 165.2, FP8 330.3 dense, 1008 GB/s; RTX 4080: 48.7, 48.7, 97.5, 194.9, 717 GB/s). The workstation
    # twin shows the halving: the A40 (GA102) datasheet gives FP32 37.4 and TF32 74.8 TFLOP/s. fp64 runs
    # at 1/64 of fp32 on GA10x and AD10x (two fp64 units per SM).
    Card("RTX 4090", r"RTX 4090", {"fp8": 330.3, "bf16": 165.2, "fp16": 165.2, "tf32": 82.6, "fp32": 82.6,
                                   "fp64": 1.29}, 1.008, 8, "NVIDIA Ada whitepaper (GeForce RTX 4090), dense"),
    Card("RTX 4080", r"RTX 4080", {"fp8": 194.9, "bf16": 97.5, "fp16": 97.5, "tf32": 48.7, "fp32": 48.7,
                                   "fp64": 0.76}, 0.717, 8, "NVIDIA Ada whitepaper (GeForce RTX 4080), dense"),
    # The RTX 3090 Ti is the full GA102 (10,752 CUDA cores at a 1.86 GHz boost: 40.0 fp32 TFLOP/s, tensor fp16/bf16
    # with fp32 accumulation twice that, 21 Gbps on 384 bits: 1,008 GB/s), the same GeForce halving; before the
    # RTX 3090, whose pattern its name also matches (review 6: triton_kernels_gpu's 3090 Ti read as a 3090).
    Card("RTX 3090 Ti", r"RTX 3090 Ti", {"bf16": 80.0, "fp16": 80.0, "tf32": 40.0, "fp32": 40.0, "fp64": 0.625},
         1.008, 8, "NVIDIA GeForce RTX 3090 Ti specifications (full GA102), dense"),
    Card("RTX 3090", r"RTX 3090", {"bf16": 71.0, "fp16": 71.0, "tf32": 35.6, "fp32": 35.6, "fp64": 0.556}, 0.936,
         8, "NVIDIA GA102 whitepaper (GeForce RTX 3090), dense"),
    Card("RTX 3080", r"RTX 3080", {"bf16": 59.5, "fp16": 59.5, "tf32": 29.8, "fp32": 29.8, "fp64": 0.465}, 0.76,
         8, "NVIDIA GA102 whitepaper (GeForce RTX 3080), dense"),
    # NVIDIA L4 datasheet (nvidia.com/en-us/data-center/l4): fp64 runs at 1/64 of fp32, not listed.
    Card("L4", r"\bL4\b", {"fp8": 242.5, "bf16": 121.0, "fp16": 121.0, "tf32": 60.0, "fp32": 30.3, "fp64": 0.47},
         0.3, 8, "NVIDIA L4 datasheet, dense"),
    # NVIDIA V100 datasheet (nvidia.com/en-us/data-center/v100): fp16 tensor cores only, no tf32/bf16.
    Card("V100S PCIe", r"V100S", {"fp16": 130.0, "fp32": 16.4, "fp64": 8.2}, 1.134, 7,
         "NVIDIA V100 datasheet (V100S PCIe)"),
    Card("V100 PCIe", r"V100.*PCIE", {"fp16": 112.0, "fp32": 14.0, "fp64": 7.0}, 0.9, 7,
         "NVIDIA V100 datasheet (PCIe)"),
    Card("V100 SXM2", r"V100", {"fp16": 125.0, "fp32": 15.7, "fp64": 7.8}, 0.9, 7,
         "NVIDIA V100 datasheet (SXM2)"),
    # NVIDIA T4 datasheet (Turing): fp16 tensor cores, no tf32/bf16.
    Card("T4", r"\bT4\b", {"fp16": 65.0, "fp32": 8.1, "fp64": 0.25}, 0.32, 7, "NVIDIA T4 datasheet"),
    # NVIDIA Tesla P100 datasheet (Pascal): no tensor cores; fp16 at twice the fp32 rate.
    Card("P100", r"P100", {"fp16": 18.7, "fp32": 9.3, "fp64": 4.7}, 0.732, 6, "NVIDIA Tesla P100 datasheet (PCIe)"),
    # AMD Instinct MI350X data sheet (amd.com, CDNA 4): no TF32 unit (emulated in bf16), fp64 matrix as vector.
    Card("MI355X", r"MI355X", {"fp8": 5033.2, "bf16": 2516.6, "fp16": 2516.6, "fp32": 157.3, "fp64": 78.6}, 8.0, 9,
         "AMD Instinct MI355X data sheet, dense"),
    Card("MI350X", r"MI350|gfx950", {"fp8": 4614.0, "bf16": 2307.0, "fp16": 2307.0, "fp32": 144.2, "fp64": 72.1}, 8.0, 9,
         "AMD Instinct MI350X data sheet, dense"),
    # AMD Instinct MI325X data sheet (amd.com, CDNA 3): the MI300X's matrix cores with HBM3E.
    Card("MI325X", r"MI325X", {"fp8": 2614.9, "bf16": 1307.4, "fp16": 1307.4, "tf32": 653.7, "fp32": 163.4,
                               "fp64": 163.4}, 6.0, 9, "AMD Instinct MI325X data sheet, dense"),
    # AMD Instinct MI250X data sheet (amd.com, CDNA 2): matrix fp32/fp64 at twice the vector rate, no TF32
    # or fp8; matched for MI250 (gfx90a) too, whose figures are about 0.87 of these.
    Card("MI250X", r"MI250|gfx90a", {"bf16": 383.0, "fp16": 383.0, "fp32": 95.7, "fp64": 95.7}, 3.2768, 9,
         "AMD Instinct MI250X data sheet"),
    # AMD Instinct MI300X data sheet (amd.com): matrix cores, dense (sparsity halved). Its GEMMs reach a smaller
    # share of the datasheet than the H200's (the estimate would be 1000 bf16): measured by SemiAnalysis
    # ("MI300X vs H100 vs H200 Benchmark Part 1: Training", 2024-12-22), bf16 GEMMs ~620 TFLOP/s, fp8 ~990
    # (their H100: ~720, beside our H200's 757). TraceLens' MI300X traces sit there: tl_compile_triton's
    # 32768x2048x8192 bf16 GEMM runs 489-619 TFLOP/s.
    Card("MI300X", r"MI300X|gfx942", {"fp8": 2614.9, "bf16": 1307.4, "fp16": 1307.4, "tf32": 653.7, "fp32": 163.4,
                                      "fp64": 163.4}, 5.3, 9, "AMD Instinct MI300X data sheet, dense",
         MI300X_MEASURED),
)


def card_named(name: str) -> Card | None:
    """The table's card for a deviceProperties name ('NVIDIA H200', 'NVIDIA A100-SXM4-80GB')."""
    for card in CARDS:
        if re.search(card.pattern, name, re.I):
            return card
    return None


def device_name(trace: Trace) -> str | None:
    """The name of the GPU the kernels ran on (the first device of the header otherwise)."""
    props = trace.device_properties
    if not props:
        return None
    gpu_pids = sorted(trace.device_pids)
    for p in props:
        if p.get("id") in gpu_pids and isinstance(p.get("name"), str):
            return str(p["name"])
    name = props[0].get("name")
    return str(name) if isinstance(name, str) else None


def compute_major(trace: Trace) -> int | None:
    props = trace.device_properties
    major = props[0].get("computeMajor") if props else None
    return int(major) if isinstance(major, int) else None


_override: list[Card] = []  # set by --peaks FILE, for this process


def card_of(trace: Trace) -> Card | None:
    """The card the trace ran on: --peaks FILE's where given, else the table's by deviceProperties."""
    if _override:
        return _override[0]
    name = device_name(trace)
    card = card_named(name) if name else None
    return card or _card_by_properties(trace.device_properties)


def _given_or_traced(card: Card | None, trace: Trace) -> Card | None:
    """The card given, else the trace's (card_of)."""
    return card if card is not None else card_of(trace)


# A chip the header's compute capability and SM count name alone, for boards the table's names miss
# ('PG509-210'): the GA100 of the A100 is the only sm_80 part with 108 SMs (the A30, also sm_80, has 56).
A100_SMS = 108
# The A100's two memory sizes: 40 GB (42,297,524,224 bytes in HTA's PG509-200 traces) and 80 GB.
A100_80GB_FROM_BYTES = 60e9


def _card_by_properties(props: list[dict[str, Any]]) -> Card | None:
    first = props[0] if props else {}
    if (first.get("computeMajor"), first.get("computeMinor"), first.get("numSms")) != (8, 0, A100_SMS):
        return None
    memory = first.get("totalGlobalMem")
    big = isinstance(memory, (int, float)) and memory >= A100_80GB_FROM_BYTES
    return next(c for c in CARDS if c.name == ("A100 SXM 80GB" if big else "A100 40GB"))


def tf32_gains(card: Card) -> bool:
    """Whether TF32 runs faster than fp32 on this card (not on GeForce Ampere/Ada: the same rate)."""
    tf32, fp32 = card.tflops.get("tf32"), card.tflops.get("fp32")
    return tf32 is not None and (fp32 is None or tf32 > fp32)


# A peaks file is a few hundred bytes: one past this is no peaks file (`--peaks /dev/zero` was read
# without end).
PEAKS_MAX_BYTES = 1 << 20
# No card comes near these (a B200 does ~4,500 dense fp8 TFLOP/s and 8 TB/s; its compute major is 10):
# a value past them is a typo or an attack, and its products overflow nothing below them.
MAX_PEAK_TFLOPS = 1e7
MAX_PEAK_TBPS = 1e5
MAX_COMPUTE_MAJOR = 1000


def load_peaks(path: str) -> Card:
    """A card from a JSON file, for GPUs the table lacks or measured ceilings of your own:

        {"name": "my GPU", "tflops": {"bf16": 989, "tf32": 494, "fp32": 67, "fp64": 67},
         "hbm_tbps": 4.8, "compute_major": 9, "measured": {"bf16": 757, "hbm": 4.27}}

    `tflops` are datasheet dense peaks per dtype (fp8, bf16, fp16, tf32, fp32, fp64); `measured`, the
    ceilings a real GEMM or copy reaches (optional: else the datasheet times the share the H200 reached).
    Every number must be finite and above 0 (the ratings divide by them); anything else is refused
    in one line that names the key."""
    data = _peaks_json(path)
    try:
        tflops = {str(k): _peak(v, MAX_PEAK_TFLOPS, f"tflops.{k}") for k, v in _table(data, "tflops").items()
                  if k in DTYPES}
        measured = {str(k): _peak(v, MAX_PEAK_TBPS if k == "hbm" else MAX_PEAK_TFLOPS, f"measured.{k}")
                    for k, v in _table(data, "measured", {}).items() if k in (*DTYPES, "hbm")}
        hbm = _peak(data.get("hbm_tbps"), MAX_PEAK_TBPS, "hbm_tbps")
        major = _compute_major(data.get("compute_major", 0))
    except ValueError as err:
        raise UsageError(f"{path}: not a peaks file: {err}") from None
    if not tflops:
        raise UsageError(f"{path}: no tflops for any of {', '.join(DTYPES)}")
    return Card(str(data.get("name", path)), ".*", tflops, hbm, major, f"--peaks {path}", measured)


def _compute_major(major: Any) -> int:
    if isinstance(major, bool) or not isinstance(major, int) or not 0 <= major <= MAX_COMPUTE_MAJOR:
        raise ValueError(f"compute_major: expected a whole number from 0 to {MAX_COMPUTE_MAJOR}, not {major!r:.40}")
    return major


def _peaks_json(path: str) -> dict[str, Any]:
    """The peaks file's JSON object, read to at most PEAKS_MAX_BYTES."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(PEAKS_MAX_BYTES + 1)
    except OSError as err:
        raise UsageError(f"{path}: cannot read the peaks file: {err.strerror or err}") from None
    if len(raw) > PEAKS_MAX_BYTES:
        raise UsageError(f"{path}: more than {PEAKS_MAX_BYTES:,} bytes: not a peaks file")
    try:
        data = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as err:  # RecursionError: nested thousands deep
        why = "nested too deeply" if isinstance(err, RecursionError) else err
        raise UsageError(f"{path}: not a peaks file (not JSON: {why}); expected "
                         '{"tflops": {"bf16": ...}, "hbm_tbps": ...}') from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a peaks file (JSON, but not an object); expected "
                         '{"tflops": {"bf16": ...}, "hbm_tbps": ...}')
    return data


def _table(data: dict[str, Any], key: str, default: dict[str, Any] | None = None) -> dict[str, Any]:
    value = data.get(key, default)
    if not isinstance(value, dict):
        raise ValueError(f"{key}: expected an object of numbers per dtype, not {value!r:.40}")
    return value


def _peak(value: Any, most: float, key: str) -> float:
    """A peak: a number (or a number's text), finite, above 0 and at most `most`."""
    number = None
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            number = float(value)
        except (ValueError, OverflowError):
            number = None
    if number is None or not 0 < number <= most:  # (nan fails both)
        raise ValueError(f"{key}: expected a number above 0 and at most {most:g}, not {value!r:.40}")
    return number


def use_peaks(card: Card | None) -> None:
    """Make `card` the one every trace is rated against (None: back to the table)."""
    _override.clear()
    if card is not None:
        _override.append(card)


# -- FLOPs from the recorded shapes --------------------------------------------------------------

GEMM_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::matmul",
                      "aten::linear", "aten::_scaled_mm", "aten::_addmm_activation"})
# Where the two matrices are among the op's inputs: addmm-like ops put the bias (self) first.
_OPERANDS = {"aten::addmm": (1, 2), "aten::baddbmm": (1, 2), "aten::addbmm": (1, 2),
             "aten::_addmm_activation": (1, 2)}


def _shape(value: Any) -> list[int] | None:
    if isinstance(value, list) and value and all(isinstance(v, int) and v >= 0 for v in value):
        return value
    return None


def gemm_mnk(op: str, dims: Any) -> tuple[int, int, int, int] | None:
    """(batch, M, N, K) of one call of a GEMM op, from its `Input Dims` (None when the shapes are
    missing or do not fit the op)."""
    if op not in GEMM_OPS or not isinstance(dims, list):
        return None
    i, j = _OPERANDS.get(op, (0, 1))
    if len(dims) <= j:
        return None
    a, b = _shape(dims[i]), _shape(dims[j])
    if a is None or b is None:
        return None
    return _MNK.get(op, _mm_mnk)(a, b)


def _linear_mnk(a: list[int], b: list[int]) -> tuple[int, int, int, int] | None:
    """x [..., K] @ w[N, K]^T"""
    if len(b) != 2 or a[-1] != b[1]:
        return None
    return 1, math.prod(a[:-1]), b[0], a[-1]


def _bmm_mnk(a: list[int], b: list[int]) -> tuple[int, int, int, int] | None:
    if len(a) != 3 or len(b) != 3 or a[0] != b[0] or a[2] != b[1]:
        return None
    return a[0], a[1], b[2], a[2]


def _mm_mnk(a: list[int], b: list[int]) -> tuple[int, int, int, int] | None:
    if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
        return None
    return 1, a[0], b[1], a[1]


# The aten ops that are one GEMM each (the CPU rules' and the busy-CPU notice's work).
ARITHMETIC_GEMM_OPS = re.compile(r"^aten::(mm|addmm|bmm|baddbmm|addbmm|_addmm_activation)$")


def call_flops(facts: Facts, idx: np.ndarray) -> np.ndarray:
    """Each GEMM call's FLOPs from its recorded Input Dims; NaN where they are unknown (no shapes)."""
    trace = facts.trace
    return np.array([gemm_flops(trace.event_name(int(i)), a.dims if a is not None else None) or np.nan
                     for i, a in zip(idx.tolist(), op_args(facts, idx.tolist()), strict=True)], dtype=np.float64)


def gemm_flops(op: str, dims: Any) -> float | None:
    """2*M*N*K times the batch for one call of a GEMM op, from its `Input Dims`."""
    mnk = gemm_mnk(op, dims)
    return None if mnk is None else 2.0 * math.prod(mnk)


def _matmul_mnk(a: list[int], b: list[int]) -> tuple[int, int, int, int] | None:
    """torch.matmul's broadcasting: 1-D operands gain a unit dim, batch dims broadcast."""
    a2 = [1, *a] if len(a) == 1 else a
    b2 = [*b, 1] if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        return None
    batch_a, batch_b = a2[:-2], b2[:-2]
    width = max(len(batch_a), len(batch_b))
    batch_a = [1] * (width - len(batch_a)) + batch_a
    batch_b = [1] * (width - len(batch_b)) + batch_b
    if any(x != y and 1 not in (x, y) for x, y in zip(batch_a, batch_b, strict=True)):
        return None
    batch = math.prod(max(x, y) for x, y in zip(batch_a, batch_b, strict=True))
    return batch, a2[-2], b2[-1], a2[-1]


# (batch, M, N, K) of each GEMM op from its two matrices (the rest: _mm_mnk)
_MNK = {"aten::linear": _linear_mnk, "aten::matmul": _matmul_mnk,
        "aten::bmm": _bmm_mnk, "aten::baddbmm": _bmm_mnk, "aten::addbmm": _bmm_mnk}


# `Input type` as torch records it -> the dtype of the peak table.
_TYPES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64"}
TF32_KERNEL = re.compile(r"tf32", re.I)


def dtype_of(type_name: str) -> str | None:
    if type_name in _TYPES:
        return _TYPES[type_name]
    return "fp8" if "Float8" in type_name else None


def gemm_dtype(op: str, types: Any, kernel_name: str) -> str | None:
    """The precision the GEMM ran in: its first matrix operand's dtype, fp32 inputs on a TF32
    kernel (`..._tf32f32_...`) counting as tf32."""
    if not isinstance(types, list):
        return None
    i = _OPERANDS.get(op, (0, 1))[0]
    if len(types) <= i or not isinstance(types[i], str):
        return None
    dtype = dtype_of(types[i])
    if dtype == "fp32" and TF32_KERNEL.search(kernel_name):
        return "tf32"
    return dtype


# -- per kernel call --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Gemm:
    """One GEMM kernel call with the FLOPs of the op call that launched it. Slots: one per call is
    kept for the whole analysis (62 k on a 1 GB copy of big_gpt_eager_20steps, 2.3 MiB less)."""

    kernel: int  # event index
    op: int  # event index of the GEMM op
    flops: float
    dtype: str | None
    mnk: tuple[int, int, int, int]  # batch, M, N, K

    def tflops(self, dur_ns: float) -> float:
        return self.flops / max(float(dur_ns), 1.0) / 1e3


# Distinct (op, shapes) texts whose FLOPs, dtype or bytes are remembered: a trace has a few hundred,
# the bound keeps a process that reads many traces from growing without end.
MEMO_SIZE = 1 << 16


@functools.lru_cache(maxsize=MEMO_SIZE)
def _mnk_of(op: str, dims_text: bytes) -> tuple[int, int, int, int] | None:
    """gemm_mnk of the op's `Input Dims` JSON text: computed once per distinct text."""
    return gemm_mnk(op, msgspec.json.decode(dims_text))


@functools.lru_cache(maxsize=MEMO_SIZE)
def _dtype_of(op: str, types_text: bytes, kernel_name: str) -> str | None:
    return gemm_dtype(op, msgspec.json.decode(types_text), kernel_name)


def _longest_per_op(facts: Facts, kernels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of these kernels (all with an owner op), the longest of each op call, and those ops: the
    kernel the op's work is counted on (its GEMM, not the memset beside it)."""
    owners = facts.owner[kernels]
    order = np.lexsort((-facts.trace.dur[kernels], owners))
    first = np.ones(order.size, dtype=bool)
    first[1:] = owners[order][1:] != owners[order][:-1]
    picked = kernels[order][first]
    return picked, facts.owner[picked]


@per_facts
def gemms(facts: Facts) -> dict[int, Gemm]:
    """Kernel event index -> Gemm, for every kernel whose launching op is a GEMM op with shapes."""
    trace = facts.trace
    kernels = np.flatnonzero(facts.is_device_work & trace.category_mask({"kernel"}) & (facts.owner >= 0))
    gemm_name_ids = np.asarray([i for i, n in enumerate(trace.names) if n in GEMM_OPS], dtype=trace.name.dtype)
    kernels = kernels[np.isin(trace.name[facts.owner[kernels]], gemm_name_ids)]
    out: dict[int, Gemm] = {}
    if kernels.size:
        picked, ops = _longest_per_op(facts, kernels)
        for k, op, args in zip(picked.tolist(), ops.tolist(), op_args(facts, ops.tolist()), strict=True):
            gemm = None if args is None else _gemm(trace, k, op, args)
            if gemm is not None:
                out[k] = gemm
    return out


def _gemm(trace: Trace, k: int, op: int, args: OpArgs) -> Gemm | None:
    """Kernel k as a GEMM of its launching op, from the op's shapes and types; None where they give no FLOPs."""
    name = trace.event_name(op)
    mnk = _mnk_of(name, args.dims_text)
    if mnk is None or not math.prod(mnk):
        return None
    return Gemm(k, op, 2.0 * math.prod(mnk), _dtype_of(name, args.types_text, trace.event_name(k)), mnk)


@dataclass(frozen=True)
class Rate:
    """A group of kernel calls (one kernel name, one op) against the card."""

    calls: int  # calls in the group
    rated_calls: int  # calls with FLOPs
    flops: float  # over the rated calls
    rated_us: float  # time of the rated calls
    tflops: float | None  # achieved, over the rated calls
    dtype: str | None  # the most common dtype of the rated calls
    card: str | None
    peak_tflops: float | None  # datasheet
    ceiling_tflops: float | None  # measured (or estimated) practical ceiling
    ceiling_measured: bool
    peak_share: float | None  # achieved / datasheet
    ceiling_share: float | None  # achieved / ceiling


def rate(facts: Facts, kernels: np.ndarray, card: Card | None = None) -> Rate:
    """The achieved rate of these kernel calls (event indices) and where it stands on the card."""
    trace = facts.trace
    card = _given_or_traced(card, trace)
    table = gemms(facts)
    rated = [table[int(k)] for k in kernels.tolist() if int(k) in table]
    flops = float(sum(g.flops for g in rated))
    rated_ns = float(sum(int(trace.dur[g.kernel]) for g in rated))
    tflops = flops / rated_ns / 1e3 if rated and rated_ns > 0 else None
    dtype = _common_dtype(rated)
    return Rate(calls=int(kernels.size), rated_calls=len(rated), flops=flops, rated_us=rated_ns / 1000.0,
                tflops=tflops, dtype=dtype, **_standing(card, dtype, tflops))


def _common_dtype(rated: list[Gemm]) -> str | None:
    """The most common dtype of the calls; a tie goes to the first call's (a set's order moves with the hash
    seed)."""
    dtypes = [g.dtype for g in rated if g.dtype]
    return max(dict.fromkeys(dtypes), key=dtypes.count) if dtypes else None


def _standing(card: Card | None, dtype: str | None, tflops: float | None) -> dict[str, Any]:
    """Rate's fields that say where `tflops` in `dtype` stands on the card (all None without a card)."""
    if card is None:
        return {"card": None, "peak_tflops": None, "ceiling_tflops": None, "ceiling_measured": False,
                "peak_share": None, "ceiling_share": None}
    peak, ceiling = card.peak(dtype), card.ceiling(dtype)
    return {"card": card.name, "peak_tflops": peak, "ceiling_tflops": ceiling,
            "ceiling_measured": bool(card.ceiling_measured(dtype)),
            "peak_share": tflops / peak if tflops and peak else None,
            "ceiling_share": tflops / ceiling if tflops and ceiling else None}


def headroom_ns(facts: Facts, kernels: np.ndarray, card: Card | None = None) -> float:
    """Time these calls spend above what the card's ceiling for their dtype would take, summed per
    call. A call within AT_CEILING_SHARE of the ceiling (or above it) contributes 0: that close, the
    difference is the ceiling's own run-to-run spread. Calls without FLOPs or dtype contribute 0."""
    trace = facts.trace
    card = _given_or_traced(card, trace)
    if card is None:
        return 0.0
    table = gemms(facts)
    total = 0.0
    for k in kernels.tolist():
        g = table.get(int(k))
        if g is not None:
            total += _above_ceiling_ns(g, card, float(trace.dur[k]))
    return total


def _above_ceiling_ns(g: Gemm, card: Card, dur_ns: float) -> float:
    """What a call of `dur_ns` spends above the time the card's ceiling for its dtype takes; 0 within
    AT_CEILING_SHARE of it, or without a ceiling for its dtype."""
    ceiling = card.ceiling(g.dtype)
    if not ceiling:
        return 0.0
    ideal = g.flops / (ceiling * 1e3)  # ns at the ceiling
    return dur_ns - ideal if ideal < AT_CEILING_SHARE * dur_ns else 0.0


# Bytes per element of the `Input type` strings torch records.
ELEMENT_BYTES = {"double": 8, "float": 4, "c10::BFloat16": 2, "c10::Half": 2, "long int": 8, "int": 4,
                 "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1,
                 "c10::Float8_e5m2": 1, "c10::complex<float>": 8, "c10::complex<double>": 16}
# Ops that only write their (first) tensor: gpu/recompile's aten::zero_ fills ran at 4.37 TB/s, not
# the 8.74 TB/s a read-and-write count made of them.
WRITE_ONLY_OPS = frozenset({"aten::zero_", "aten::fill_", "aten::zeros", "aten::ones", "aten::full",
                            "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::normal_",
                            "aten::uniform_", "aten::random_"})
# Normalisations, forward and backward: their kernels count as reductions (the statistics), but the op
# writes an output (or input gradient) the size of its input (gpu/resnet50_nograd's batch_norm_transform_input: ~1.4 GB a step read and written,
# 1.3 TB/s, not the 0.5 TB/s a read-only count made of it).
NORMALIZING_OPS = frozenset({"aten::native_batch_norm", "aten::cudnn_batch_norm", "aten::miopen_batch_norm",
                             "aten::_native_batch_norm_legit", "aten::_native_batch_norm_legit_no_training",
                             "aten::native_layer_norm", "aten::native_group_norm", "aten::_fused_rms_norm",
                             "aten::native_batch_norm_backward", "aten::cudnn_batch_norm_backward",
                             "aten::native_layer_norm_backward", "aten::native_group_norm_backward"})
# Purposes whose kernels stream memory: their bytes (inputs read, one output written) rate them.
MEMORY_PURPOSES = frozenset({"elementwise", "cast", "reduction", "copy", "memset"})


class _Bytes(msgspec.Struct, gc=False):
    bytes: int = -1


def memory_bytes(facts: Facts) -> dict[int, float]:
    """Device work event -> bytes it moved: a copy's or memset's own `bytes`; an elementwise, cast or
    reduction kernel's from its op's shapes and dtypes (every tensor input read once, an output the
    size of the largest input written once, reductions writing nothing of note), given to the op
    call's longest kernel. stream_fp32's `x.mul(2.0)` on 256 Mi floats: 2 GiB in 505 µs, 4.25 TB/s."""
    plan = _byte_plan(facts)
    return _traffic(facts, np.concatenate([plan.transfers, plan.picked]))


@dataclass
class _BytePlan:
    """Which events memory_bytes counts, and what it has counted so far (None: no bytes known)."""

    transfers: np.ndarray  # copies and memsets: their own `bytes`
    picked: np.ndarray  # the longest memory-bound kernel of each op call: its op's shapes
    ops: np.ndarray  # aligned with picked
    fill: np.ndarray  # aligned with picked: the op only writes its tensor
    reduces: np.ndarray  # aligned with picked: a reduction (writes nothing of note)
    done: dict[int, float | None] = field(default_factory=dict)


@per_facts
def _byte_plan(facts: Facts) -> _BytePlan:
    trace = facts.trace
    transfers = np.flatnonzero(facts.is_device_work & trace.category_mask({"gpu_memcpy", "gpu_memset"}))
    codes = classify(facts)
    wanted = np.isin(codes, [CODE[p] for p in MEMORY_PURPOSES - {"copy", "memset"}])
    kernels = np.flatnonzero(wanted & facts.is_device_work & trace.category_mask({"kernel"}) & (facts.owner >= 0))
    picked, ops = _longest_per_op(facts, kernels) if kernels.size else (kernels, kernels)
    fill = np.array([n in WRITE_ONLY_OPS for n in trace.names], dtype=bool)[trace.name[ops]]
    normalizes = np.array([n in NORMALIZING_OPS for n in trace.names], dtype=bool)[trace.name[ops]]
    return _BytePlan(transfers, picked, ops, fill, (codes[picked] == CODE["reduction"]) & ~normalizes)


def _traffic(facts: Facts, events: np.ndarray) -> dict[int, float]:
    """memory_bytes for these events only (in their order), reading the args of those not yet
    counted: the terminal names 3 kernels, whose calls are a fraction of the trace's."""
    plan = _byte_plan(facts)
    done = plan.done
    todo = np.asarray([k for k in events.tolist() if k not in done], dtype=np.int64)
    if todo.size:
        done.update(dict.fromkeys(todo.tolist()))
        _count_transfers(facts, plan, todo)
        _count_kernels(facts, plan, todo)
    return {k: v for k in events.tolist() if (v := done[k]) is not None}


def _count_transfers(facts: Facts, plan: _BytePlan, todo: np.ndarray) -> None:
    """The copies and memsets among `todo`: their own `bytes`."""
    sent = plan.transfers[np.isin(plan.transfers, todo)].tolist()
    for i, args in zip(sent, facts.trace.decode_args(sent, _Bytes), strict=True):
        if args is not None and args.bytes >= 0:
            plan.done[i] = float(args.bytes)


def _count_kernels(facts: Facts, plan: _BytePlan, todo: np.ndarray) -> None:
    """The memory-bound kernels among `todo`: their op's shapes and dtypes."""
    mine = np.flatnonzero(np.isin(plan.picked, todo))
    for k, args, fill, reduces in zip(plan.picked[mine].tolist(), op_args(facts, plan.ops[mine].tolist()),
                                      plan.fill[mine].tolist(), plan.reduces[mine].tolist(), strict=True):
        plan.done[k] = None if args is None else _op_bytes(args.dims_text, args.types_text, fill, reduces)


@functools.lru_cache(maxsize=MEMO_SIZE)
def _op_bytes(dims_text: bytes, types_text: bytes, fill: bool, reduces: bool) -> float | None:
    """The bytes an op call moves, from its `Input Dims` and `Input type` JSON texts (once per
    distinct pair): None without a tensor of known size."""
    sizes = _tensor_bytes(msgspec.json.decode(dims_text), msgspec.json.decode(types_text))
    if not sizes:
        return None
    if fill:
        return float(max(sizes))  # a fill writes its tensor and reads nothing
    written = 0 if reduces else max(sizes)
    return float(sum(sizes) + written)


def _tensor_bytes(dims: Any, types: Any) -> list[int]:
    if not isinstance(dims, list) or not isinstance(types, list):
        return []
    out = []
    for shape, kind in zip(dims, types, strict=False):
        size = ELEMENT_BYTES.get(kind) if isinstance(kind, str) else None
        if size and _shape(shape) is not None:
            out.append(math.prod(shape) * size)
    return out


@dataclass(frozen=True)
class KernelRow:
    """One kernel name over the window: calls, time, what it is for, and how it runs against the card
    (FLOPs for GEMMs, bytes for memory-bound work)."""

    name: str
    calls: int
    total_us: float
    mean_us: float
    purpose: str
    flops: float | None
    bytes: float | None
    tflops: float | None
    tbps: float | None
    dtype: str | None
    peak_share: float | None  # of the datasheet peak: TFLOP/s in its dtype, or HBM TB/s
    bound: str | None  # "compute" (rated by FLOPs), "memory" (by bytes), None (neither known)
    op: str = ""  # the op that launched most of its calls ("" where none is known)


def _moved(trace: Any, members: np.ndarray, traffic: dict[int, float]) -> tuple[float | None, float | None]:
    """The bytes these calls moved (those whose bytes are known) and at what rate, TB/s."""
    moved = [k for k in members.tolist() if k in traffic]
    if not moved:
        return None, None
    nbytes = float(sum(traffic[k] for k in moved))
    moved_ns = float(trace.dur[moved].sum())
    return nbytes, (nbytes / moved_ns / 1e3 if nbytes and moved_ns > 0 else None)


def _bound(r: Rate, tbps: float | None, hbm_card: Card | None) -> tuple[str | None, float | None]:
    """What rates a kernel ("compute" by FLOPs, "memory" by bytes, None) and its share of the datasheet peak;
    `hbm_card` None where the work does not run over HBM (host<->device copies run over PCIe/NVLink-C2C)."""
    if r.rated_calls:
        bound, share = "compute", r.peak_share
    elif tbps is not None:
        bound, share = "memory", (tbps / hbm_card.hbm_tbps if hbm_card else None)
    else:
        return None, None
    if share is not None and share > 1.0:
        share = None  # above the datasheet: the byte or FLOP count does not fit this kernel
    return bound, share


def _main_op(facts: Facts, members: np.ndarray) -> str:
    """The op that launched most of these calls ("" where none is known)."""
    owners = facts.owner[members]
    owners = owners[owners >= 0]
    return facts.trace.names[int(np.bincount(facts.trace.name[owners]).argmax())] if owners.size else ""


def kernel_rows(facts: Facts, limit: int | None = None) -> list[KernelRow]:
    """Device work by name (kernels, copies, memsets), most time first."""
    trace = facts.trace
    idx = np.flatnonzero(facts.is_device_work)
    if idx.size == 0:
        return []
    card = card_of(trace)
    codes = classify(facts)
    ids, inverse = np.unique(trace.name[idx], return_inverse=True)
    totals = np.bincount(inverse, weights=trace.dur[idx])
    shown = np.argsort(-totals, kind="stable")[:limit]
    traffic = _traffic(facts, idx[np.isin(inverse, shown)])  # the bytes of the rows shown only
    rows = []
    for g in shown.tolist():
        members = idx[inverse == g]
        r = rate(facts, members, card)
        total_us = float(totals[g]) / 1000.0
        name = trace.names[int(ids[g])]
        purpose = PURPOSES[int(np.bincount(codes[members].astype(np.int64)).argmax())]
        nbytes, tbps = _moved(trace, members, traffic)
        bound, share = _bound(r, tbps, card if purpose != "copy" or "DtoD" in name else None)
        rows.append(KernelRow(name, int(members.size), total_us, total_us / members.size,
                              purpose, r.flops if r.rated_calls else None, nbytes, r.tflops, tbps, r.dtype, share,
                              bound, _main_op(facts, members)))
    return rows
