"""The notices of a reading: what the profiler did not record, and what the verdict and the one-time costs
leave open, which change how to read everything else. Each is one line of pista's English, said once above
the findings (the reader's own notices come from pista.trace; a rule that failed has its typed notice,
pista.isolation.RuleFailed, written by pista.i18n).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from pista.cpuload import busy_cpu
from pista.policy import COMPUTE_MIN_GPU_BUSY
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


def one_time_notices(findings: list[Finding], s: Summary) -> list[str]:
    """Whether one-time costs fill most of the window, so that the reading is mostly theirs."""
    once = [f for f in findings if f.impact.once]
    share = min(1.0, sum(f.impact.share for f in once))
    if share < ONE_TIME_NOTICE_SHARE:
        return []
    rules = ", ".join(dict.fromkeys(f.rule for f in once))
    return [f"{100 * share:.0f}% of this window is one-time cost ({rules}): the table, the totals and the verdict "
            "mostly show it; re-profile after a warm-up (torch.profiler.schedule with warmup steps) to read the "
            "steady steps"]


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


def _copy_bound(s: Summary) -> list[str]:
    """A balanced window whose GPU is kept busy by copies: the transfers set the pace."""
    busy, kernels = s.gpu_busy_share or 0.0, s.kernel_busy_share or 0.0
    device = sum(s.gpu_time_by_purpose.values())
    copies = (s.gpu_time_by_purpose.get("copy", 0.0) / device) if device else 0.0
    if busy < COPY_BUSY_NOTICE_SHARE or kernels >= COMPUTE_MIN_GPU_BUSY or copies < COPY_NOTICE_MIN_SHARE:
        return []
    return [f"balanced weighs the GPU's kernels, which run {100 * kernels:.0f}% of the window, but the GPU is busy "
            f"{100 * busy:.0f}% of it and {100 * copies:.0f}% of its time is copies: the transfers between host and "
            "device set the pace, not the host's dispatch nor the kernels"]


def verdict_notices(s: Summary, host_ops: bool = True) -> list[str]:
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
    return [f"balanced: the host takes {ratio:.1f}x the GPU's time and the GPU computes {100 * s.kernel_busy_share:.0f}% "
            "of the window; the profiler about doubles host time, so without it the GPU is likely the limit: time a "
            "step unprofiled before acting on the idle GPU"]


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


def _no_gpu_work(facts: Facts) -> list[str]:
    """Why a trace has no device work: its launches' records were lost, or the model ran on the CPU beside a
    GPU (issue 35: both read 'the profiler ran without CUDA activities')."""
    trace = facts.trace
    devices = ", ".join(dict.fromkeys(str(p.get("name", "?")) for p in trace.device_properties))
    calls = np.flatnonzero(facts.is_launch)
    launching = [i for i in calls.tolist() if DEVICE_WORK_CALL.search(trace.event_name(i))]
    if launching:
        return [_lost_records(trace, launching)]
    if _foreign_accelerator(trace):
        return []  # it ran on an accelerator pista does not read (MTIA...): the reader's notice says so
    if calls.size or devices:
        where = f" ({devices})" if devices else ""
        return [f"the trace has a GPU{where}{f' and {calls.size} CUDA runtime call(s)' if calls.size else ''} but "
                "nothing ran on it: the model ran on the CPU (move it and its inputs with .to('cuda') if the GPU was "
                "meant), or the profiler ran without ProfilerActivity.CUDA"]
    return []


def _lost_records(trace: Trace, launching: list[int]) -> str:
    names = ", ".join(sorted({trace.event_name(i) for i in launching})[:3])
    return (f"{len(launching)} call(s) that put work on the GPU ({names}) but no kernel, copy or memset "
            "record: the GPU's records were lost (the profiler's activity buffers dropped or not flushed before "
            "the export); what follows reads the host alone. Export after the profiler has stopped (on_trace_ready "
            "or after the `with` block)")


# PyTorch's reference CPU convolutions (im2col and a GEMM per image, ATen's ConvolutionMM2d): what a
# build without a oneDNN kernel for the convolution runs.
REFERENCE_CONV = re.compile(r"^aten::(_slow_conv2d_forward|_slow_conv2d_backward|slow_conv3d_forward|"
                            r"slow_conv_dilated[23]d|slow_conv_transpose[23]d)$")
# Share of a CPU-only window in them past which the notice speaks: marcalph/kernelforge's
# chrome_trace.json (resnet18 on a Mac's CPU) spends 76% in aten::_slow_conv2d_forward; kqwq/cs345's
# 11% beside 56% in aten::mkldnn_convolution (a few shapes falling back) stays silent.
REFERENCE_CONV_SHARE = 0.25


def _reference_conv(facts: Facts) -> list[str]:
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
    return [f"{spent / (end - start):.0%} of the window ({spent / 1e6:.1f} ms in {int(outer.sum())} calls) is "
            f"{name}, PyTorch's reference CPU convolution (im2col and a GEMM per image): these convolutions ran "
            "without a oneDNN (mkldnn) kernel. On a Mac with Apple silicon, torch>=1.12 runs them on the GPU: "
            "move the model and its inputs to device='mps' (torch.backends.mps.is_available() says whether it can); "
            "on other CPUs a torch build with oneDNN (torch.backends.mkldnn.is_available()) runs them as "
            "aten::mkldnn_convolution"]


def _foreign_accelerator(trace: Trace) -> bool:
    # start-up: `pista rules` and `pista explain` load notices, not the reader
    from pista.trace.load import foreign_device_notice

    return foreign_device_notice(trace.categories, trace.cat) is not None


def _cpu_activity_notice(facts: Facts) -> list[str]:
    """What a trace of CUDA activity alone cannot say (cpu_activity_missing)."""
    if not cpu_activity_missing(facts):
        return []
    lo, hi = facts.window
    busy = max((b.clip(lo, hi).total for b in facts.gpu_busy.values()), default=0)
    idle = 1.0 - busy / max(hi - lo, 1)
    calls = int(facts.is_launch.sum())
    return [f"CPU activity was not recorded: the trace holds the GPU's work and {calls:,} runtime call(s) but no op, "
            "so what the host does between those calls (Python, ops, a data loader, waiting) cannot be told apart, "
            f"nor why the GPU idles {100 * idle:.0f}% of the window; no host-overhead verdict and no host time by "
            "region are given. Profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]"]


def coverage_notices(facts: Facts) -> list[str]:
    """What the profiler did not record, which changes how to read everything else."""
    trace = facts.trace
    notices = []
    if not facts.has_gpu:
        notices += _no_gpu_work(facts) + _reference_conv(facts)
    if facts.has_gpu and not facts.is_host.any():
        notices.append("no host (CPU) events, only GPU activity: Self CPU is 0 and the verdict cannot weigh the "
                       "host against the GPU; profile with ProfilerActivity.CPU as well")
    notices += _cpu_activity_notice(facts)
    busy = busy_cpu(facts)
    if busy is not None:
        notices.append(f"the CPU was shared while this trace was taken: {busy.op} of {busy.mflop:.2g} MFLOP took "
                       f"{busy.ms:.3g} ms, and the median GEMM call {busy.factor:.0f}x what one slow core needs; other "
                       "processes held the cores (or torch ran more threads than the job's cores): the times here are "
                       "the machine's load, not the program's. Re-capture on a quiet machine, with torch.set_num_threads "
                       "at most the cores the job owns")
    spread = _cpu_step_spread(facts)
    if spread is not None:
        lo, hi = spread
        notices.append(f"the steps of this CPU-only trace vary {hi / lo:.1f}x ({lo / 1e6:.2f} ms to "
                       f"{hi / 1e6:.2f} ms): the machine was likely busy with other work; re-capture on a quiet "
                       "machine before trusting small differences")
    negative = _negative_self_times(facts)
    if negative:
        notices.append(f"{negative:,} event(s) have a negative self time: python_function frames and the events "
                       "around them overlap without nesting (torch nests them the same way); the table leaves "
                       "the frames out, `pista sql` shows those self times as they are")
    complete = facts.is_complete & (facts.is_host | facts.is_device_work)
    zero = int((complete & (trace.dur == 0)).sum())
    if zero and zero >= ZERO_DUR_NOTICE_SHARE * int(complete.sum()):
        notices.append(f"{zero:,} of {int(complete.sum()):,} complete events have a zero or missing duration: "
                       "self times, totals and the verdict undercount")
    return notices

