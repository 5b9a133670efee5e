"""The notices of a reading: what the profiler did not record, and what the verdict and the one-time costs
leave open, which change how to read everything else. Each is one line, said once above the findings: a
typed record (its figures, no words) that pista.i18n writes in each language from `ftl/<lang>/_notices.ftl`
(arguments: `args/_notices.py`), as it writes a rule that failed (pista.isolation.RuleFailed). The reader's
own notices come from pista.trace.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from pista.cpuload import busy_cpu
from pista.finding import Record
from pista.policy import COMPUTE_MIN_GPU_BUSY, one_time_share
from pista.query import cpu_activity_missing
from pista.trace.facts import Facts
from pista.trace.model import Trace

if TYPE_CHECKING:
    from pista.analysis import Summary
    from pista.finding import Finding


# One-time costs taking at least this share of the window: the table's totals and the verdict mostly show
# them, not the steady steps (gpu/eval_first_call: a cold region, 93% of the window; an expert review asked
# for it to be said up front).
ONE_TIME_NOTICE_SHARE = 0.5


class OneTimeCost(Record, frozen=True):
    """One-time costs (`rules`) fill `share` (0..1) of the window."""

    share: float
    rules: tuple[str, ...]


class CopyBound(Record, frozen=True):
    """A balanced window whose GPU is busy `busy` of it, `copies` of its time copying, its kernels `kernels`."""

    kernels: float
    busy: float
    copies: float


class BalancedHost(Record, frozen=True):
    """A balanced window whose host takes `ratio` times the GPU's time, its kernels computing `kernels` of it."""

    ratio: float
    kernels: float


class LostRecords(Record, frozen=True):
    """`calls` runtime calls that put work on the GPU (the first `names`), and no record of that work."""

    calls: int
    names: tuple[str, ...]


class NoGpuWork(Record, frozen=True):
    """A trace with a GPU (`devices`) or `calls` runtime calls, and nothing run on it."""

    devices: tuple[str, ...]
    calls: int


class ReferenceConv(Record, frozen=True):
    """`share` (0..1) of a CPU-only window, `ms` in `calls` calls, in `name`, PyTorch's reference convolution."""

    share: float
    ms: float
    calls: int
    name: str


class NoHostEvents(Record, frozen=True):
    """GPU activity alone, no host event."""


class CpuActivityMissing(Record, frozen=True):
    """CUDA activity alone: `calls` runtime calls, the GPU idle `idle` (0..1) of the window."""

    calls: int
    idle: float


class SharedCpu(Record, frozen=True):
    """A GEMM of `mflop` MFLOP (`op`) took `ms`, the median call `factor` times what one slow core needs."""

    op: str
    mflop: float
    ms: float
    factor: float


class CpuStepSpread(Record, frozen=True):
    """The steps of a CPU-only trace span `shortest_ns` to `longest_ns`."""

    shortest_ns: float
    longest_ns: float


class NegativeSelfTimes(Record, frozen=True):
    """`events` host events whose self time is negative (python_function frames that do not nest)."""

    events: int


class ZeroDurations(Record, frozen=True):
    """`zero` of `complete` complete events last zero or nothing."""

    zero: int
    complete: int


class CyclesOverlap(Record, frozen=True):
    """Cycles `first` and `first + 1` overlap in time: two processes that share a pid."""

    first: int


class CyclesOptionsIgnored(Record, frozen=True):
    """--engine, --scheduler or --workers given for a folder of one process's cycles (pista.cli.analyze)."""


class SkippedLinks(Record, frozen=True):
    """`count` symbolic links skipped in `folder` (the first named `first`): its own files are the ranks."""

    count: int
    folder: str
    first: str


class WorkersCapped(Record, frozen=True):
    """--workers `workers` asked for, `cores` usable: `processes` run."""

    workers: int
    cores: int
    processes: int


class RankNotice(Record, frozen=True):
    """A rank's own notice (already in the reading's language) in a folder of ranks (pista.distributed)."""

    rank: int
    notice: str


class WorldSize(Record, frozen=True):
    """The traces say world_size `world`; the folder holds `ranks` ranks."""

    world: int
    ranks: int


class RanksByOrder(Record, frozen=True):
    """`count` traces carry no rank: numbered by file order (pista.distributed.rank)."""

    count: int


def one_time_notices(findings: list[Finding], s: Summary) -> list[Record]:
    """Whether one-time costs fill most of the window, so that the reading is mostly theirs."""
    share = one_time_share(findings)
    if share < ONE_TIME_NOTICE_SHARE:
        return []
    return [OneTimeCost(share, tuple(dict.fromkeys(f.rule for f in findings if f.impact.once)))]


# A balanced verdict whose host takes at least this many times the GPU's time, the GPU computing less than
# COMPUTE_MIN_GPU_BUSY of the window: the profiler's ~2x on host time (PROFILER_HOST_INFLATION) can make a
# GPU-bound step look balanced (gpu/resnet50_train: 2.2x, the GPU idle 54% of the window as profiled, yet
# 6.22 ms a step unprofiled for ~5.4 ms of GPU work; seed_mm4096_compile: 2.5x at 37%, 182 µs a step
# unprofiled for 174 µs of GPU, REVIEW.md).
BALANCED_NOTICE_MIN_RATIO = 1.5


# A balanced verdict on a GPU this busy (copies included) while its kernels compute under COMPUTE_MIN_GPU_BUSY: the
# verdict weighs kernels, so a window the copies keep busy reads "balanced" (review 4: a100_torchbench_memcpy, 98.6%
# busy copying pageable memory at 4.5-4.8 GB/s, kernels 0%); it is said what sets the pace, where copies are at least
# COPY_NOTICE_MIN_SHARE of the GPU's time (torchbench's and gpu/pageable_memcpy's 100%; not savings/h100's
# copy_pageable_tensor fixed twin, 53% copies beside kernels computing 44% of the window).
COPY_BUSY_NOTICE_SHARE = COMPUTE_MIN_GPU_BUSY
COPY_NOTICE_MIN_SHARE = 0.9


def _copy_bound(s: Summary) -> list[Record]:
    """A balanced window whose GPU is kept busy by copies: the transfers set the pace."""
    busy, kernels = s.gpu_busy_share or 0.0, s.kernel_busy_share or 0.0
    device = sum(s.gpu_time_by_purpose.values())
    copies = (s.gpu_time_by_purpose.get("copy", 0.0) / device) if device else 0.0
    if busy < COPY_BUSY_NOTICE_SHARE or kernels >= COMPUTE_MIN_GPU_BUSY or copies < COPY_NOTICE_MIN_SHARE:
        return []
    return [CopyBound(kernels, busy, copies)]


def verdict_notices(s: Summary, host_ops: bool = True) -> list[Record]:
    """What the verdict leaves open: a balanced step's idle GPU may be the profiler's doing (not said where the
    host's ops were not recorded: its time is then runtime calls alone), or its busy GPU copying."""
    if s.verdict != "balanced" or not s.self_device_total_us or s.kernel_busy_share is None:
        return []
    copy_bound = _copy_bound(s)
    if copy_bound or not host_ops:
        return copy_bound
    ratio = s.self_cpu_total_us / s.self_device_total_us
    if ratio < BALANCED_NOTICE_MIN_RATIO or s.kernel_busy_share >= COMPUTE_MIN_GPU_BUSY:
        return []
    return [BalancedHost(ratio, s.kernel_busy_share)]


# A share of zero-length complete events past which times mean little: a real trace has a few
# (instant-like ops), a hand-made one without "dur" has them all.
ZERO_DUR_NOTICE_SHARE = 0.5


# Longest over shortest step of a CPU-only trace past which the capture was contended: quiet captures
# on the project's CPU vary 1.0-1.3x (gpu/cpu_linear_host 1.17x, gpu/cpu_mlp 1.10x,
# gpu/python_loop_cpu 1.26x); gpu/cpu_linear, captured beside other work, 1.97x.
CPU_STEP_SPREAD = 1.5


def _cpu_step_spread(facts: Facts) -> tuple[float, float] | None:
    """(shortest, longest) step span in ns, on a CPU-only trace whose steps vary past CPU_STEP_SPREAD;
    None otherwise."""
    if facts.has_gpu or len(facts.steps) < 2:
        return None
    spans = [float(s.end - s.start) for s in facts.steps]
    lo, hi = min(spans), max(spans)
    return (lo, hi) if lo > 0 and hi / lo >= CPU_STEP_SPREAD else None


def _negative_self_times(facts: Facts) -> int:
    """Host events whose self time is negative because python_function frames and the events around
    them overlap without nesting (a record_function region entered inside a frame that returns before
    the region ends): the frames themselves, or events with a frame among their children."""
    trace = facts.trace
    host = facts.is_host | facts.is_overhead
    negative = host & (facts.self_time < 0)
    if not negative.any():
        return 0
    frames = trace.category_mask({"python_function"})
    has_frame_child = np.zeros(len(trace), dtype=bool)
    kids = np.flatnonzero(frames & (facts.parent >= 0))
    has_frame_child[facts.parent[kids]] = True
    return int((negative & (frames | has_frame_child)).sum())


# Runtime calls that put work on a device (a kernel, a graph, a copy or a memset), CUDA's and HIP's.
DEVICE_WORK_CALL = re.compile(r"LaunchKernel|LaunchCooperativeKernel|GraphLaunch|Memcpy|Memset")


def _no_gpu_work(facts: Facts) -> list[Record]:
    """Why a trace has no device work: its launches' records were lost, or the model ran on the CPU beside a
    GPU (issue 35: both read 'the profiler ran without CUDA activities')."""
    trace = facts.trace
    devices = tuple(dict.fromkeys(str(p.get("name", "?")) for p in trace.device_properties))
    calls = np.flatnonzero(facts.is_launch)
    launching = [i for i in calls.tolist() if DEVICE_WORK_CALL.search(trace.event_name(i))]
    if launching:
        return [_lost_records(trace, launching)]
    if _foreign_accelerator(trace):
        return []  # it ran on an accelerator pista does not read (MTIA...): the reader's notice says so
    if calls.size or devices:
        return [NoGpuWork(devices, int(calls.size))]
    return []


def _lost_records(trace: Trace, launching: list[int]) -> Record:
    return LostRecords(len(launching), tuple(sorted({trace.event_name(i) for i in launching})[:3]))


# PyTorch's reference CPU convolutions (im2col and a GEMM per image, ATen's ConvolutionMM2d): what a
# build without a oneDNN kernel for the convolution runs.
REFERENCE_CONV = re.compile(r"^aten::(_slow_conv2d_forward|_slow_conv2d_backward|slow_conv3d_forward|"
                            r"slow_conv_dilated[23]d|slow_conv_transpose[23]d)$")
# Share of a CPU-only window in them past which the notice speaks: marcalph/kernelforge's
# chrome_trace.json (resnet18 on a Mac's CPU) spends 76% in aten::_slow_conv2d_forward; kqwq/cs345's
# 11% beside 56% in aten::mkldnn_convolution (a few shapes falling back) stays silent.
REFERENCE_CONV_SHARE = 0.25


def _reference_conv(facts: Facts) -> list[Record]:
    """A CPU-only window that mostly runs the reference convolution: say so, and which backend has a kernel."""
    trace = facts.trace
    names = [i for i, n in enumerate(trace.names) if REFERENCE_CONV.match(n)]
    if facts.has_gpu or not names:
        return []
    calls = facts.is_host & np.isin(trace.name, names)
    outer = calls.copy()
    inner = np.flatnonzero(calls & (facts.parent >= 0))
    outer[inner[calls[facts.parent[inner]]]] = False  # a backward's own forward call counts once
    start, end = facts.window
    spent = float(trace.dur[outer].sum())
    if end <= start or spent < REFERENCE_CONV_SHARE * (end - start):
        return []
    name = max({trace.names[int(trace.name[i])] for i in np.flatnonzero(outer)},
               key=lambda n: float(trace.dur[outer & (trace.name == trace.names.index(n))].sum()))
    return [ReferenceConv(spent / (end - start), spent / 1e6, int(outer.sum()), name)]


def _foreign_accelerator(trace: Trace) -> bool:
    # start-up: `pista rules` and `pista explain` load notices, not the reader
    from pista.trace.load import foreign_device_notice

    return foreign_device_notice(trace.categories, trace.cat) is not None


def _cpu_activity_notice(facts: Facts) -> list[Record]:
    """What a trace of CUDA activity alone cannot say (cpu_activity_missing)."""
    if not cpu_activity_missing(facts):
        return []
    lo, hi = facts.window
    busy = max((b.clip(lo, hi).total for b in facts.gpu_busy.values()), default=0)
    idle = 1.0 - busy / max(hi - lo, 1)
    calls = int(facts.is_launch.sum())
    return [CpuActivityMissing(calls, idle)]


def coverage_notices(facts: Facts) -> list[Record]:
    """What the profiler did not record, which changes how to read everything else."""
    trace = facts.trace
    notices: list[Record] = []
    if not facts.has_gpu:
        notices += _no_gpu_work(facts) + _reference_conv(facts)
    if facts.has_gpu and not facts.is_host.any():
        notices.append(NoHostEvents())
    notices += _cpu_activity_notice(facts)
    busy = busy_cpu(facts)
    if busy is not None:
        notices.append(SharedCpu(busy.op, busy.mflop, busy.ms, busy.factor))
    spread = _cpu_step_spread(facts)
    if spread is not None:
        notices.append(CpuStepSpread(*spread))
    negative = _negative_self_times(facts)
    if negative:
        notices.append(NegativeSelfTimes(negative))
    complete = facts.is_complete & (facts.is_host | facts.is_device_work)
    zero = int((complete & (trace.dur == 0)).sum())
    if zero and zero >= ZERO_DUR_NOTICE_SHARE * int(complete.sum()):
        notices.append(ZeroDurations(zero, int(complete.sum())))
    return notices

