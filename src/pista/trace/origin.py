"""Which program wrote a chrome trace: torch.profiler (read it), torch 1.x's autograd profiler
before Kineto (read its ops, with a notice), or another tool (refuse it in one line).

Both readers (load.py in memory, stream.py for big files) call `settle` on the Trace they built,
so they agree on every file. Files gathered for issue 35 (tests/fixtures/foreign/) showed what
each tool writes:
- torch 1.x `torch.autograd.profiler.profile(...).export_chrome_trace`: a bare list of
  `{"name": "aten::...", "ph": "X", "pid": "CPU functions", "args": {}}`, no `cat`, no GPU
  kernels (with use_cuda=True a "CUDA functions" lane holds each op's CUDA time, not kernels);
  KeondoPark/luxmea's profiler_trace.json has 1,442 such ops, read before as an empty window.
- Chrome's own tracing, a compiler's timeline (kai-c: parsing, lexing), TensorFlow's timeline
  (Tensor, Memory, DataFlow, Op), a serving benchmark's spans (resnet50): categories, none of
  them torch's, read before as a cpu-only window with "No findings".
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import numpy as np

from pista.trace.core import NotATrace
from pista.trace.model import (
    CATEGORY_ALIASES,
    DEVICE_CATEGORIES,
    HOST_CATEGORIES,
    OVERHEAD_CATEGORIES,
    PH_COMPLETE,
    Trace,
)

# Every category torch.profiler's Kineto writes (the aliases' old spellings, normalised by the
# readers, included), from traces of torch 1.8 (kineto tb_plugin samples: Operator, Runtime,
# Kernel, async) to 2.9 (cpu_op, ac2g, fwdbwd, cuda_sync, overhead, Trace), ROCm's the same.
TORCH_CATEGORIES = frozenset(
    set(CATEGORY_ALIASES.values()) | HOST_CATEGORIES | DEVICE_CATEGORIES | OVERHEAD_CATEGORIES
    | {"ac2g", "async", "fwdbwd", "flow_link", "Trace", "cuda_sync", "cuda_profiler_range", "gpu_user_annotation",
       "cpu_instant_event"}
)
# The pid torch 1.x's autograd profiler gave every op in export_chrome_trace, and the one it gave
# their CUDA time when use_cuda=True.
PRE_KINETO_CPU_PID = "CPU functions"
PRE_KINETO_CUDA_PID = "CUDA functions"
# Op names only a GPU run has (cuDNN's, CUDA's, MIOpen's): a pre-Kineto export of a GPU run.
GPU_OP = re.compile(r"cudnn|miopen|_cuda|cuda_|nccl", re.I)
# How many foreign categories the refusal names.
NAMED_CATEGORIES = 4


def settle(trace: Trace) -> None:
    """Refuse a chrome trace another tool wrote; read a pre-Kineto export's ops as CPU ops."""
    used = _used_categories(trace)
    if any(map(_torch_category, used)):
        return
    if _pre_kineto_pid(trace, PRE_KINETO_CPU_PID) is not None:
        _read_pre_kineto(trace)
        return
    named = [c for c in used if c]
    if named:
        raise NotATrace(trace.source, _foreign_line(trace, named))
    if not np.any(trace.ph == PH_COMPLETE):
        _note_nothing_recorded(trace)


def _note_nothing_recorded(trace: Trace) -> None:
    trace.notices.append(
        f"the trace recorded nothing: its {len(trace.ts):,} events are lane names and marks, no op, kernel "
        "or annotation; the profiled code ran outside the profiler's active steps (torch.profiler.schedule "
        "and prof.step()) or before the profiler started")


def _torch_category(category: str) -> bool:
    """A category torch writes: its own, or Kineto's for another accelerator."""
    return category in TORCH_CATEGORIES or _foreign_accelerator(category)


def _foreign_accelerator(category: str) -> bool:
    # Kineto's categories for MTIA, XPU, HPU ... devices: a torch trace pista reads in part
    return category.split("_", 1)[0] in {"mtia", "xpu", "hpu", "privateuse1", "mlu", "gcu", "glow"}


def _used_categories(trace: Trace) -> list[str]:
    """The categories events carry (not metadata's), most used first."""
    counts = np.bincount(trace.cat.astype(np.int64), minlength=len(trace.categories))
    order = np.argsort(-counts, kind="stable")
    return [trace.categories[i] for i in order if counts[i]]


def _pre_kineto_pid(trace: Trace, name: str) -> int | None:
    pid = trace.string_ids.get(name)
    if pid is None or not np.any(trace.pid == pid):
        return None
    return pid


def _foreign_line(trace: Trace, named: list[str]) -> str:
    shown = ", ".join(named[:NAMED_CATEGORIES]) + (f" and {len(named) - NAMED_CATEGORIES} more"
                                                   if len(named) > NAMED_CATEGORIES else "")
    return (f"a chrome trace, but not from torch.profiler: none of its {len(trace.ts):,} events has a category "
            f"torch writes (cpu_op, kernel, cuda_runtime ...); its categories are {shown}. pista reads "
            "torch.profiler traces (export_chrome_trace or tensorboard_trace_handler)")


def _read_pre_kineto(trace: Trace) -> None:
    """torch 1.x's export: its ops, on the 'CPU functions' lane with no category, become cpu_op."""
    pid = _pre_kineto_pid(trace, PRE_KINETO_CPU_PID)
    ops = (trace.pid == pid) & (trace.ph == PH_COMPLETE)
    if "cpu_op" not in trace.categories:
        trace.categories.append("cpu_op")
    trace.cat[ops] = trace.categories.index("cpu_op")
    cuda = _pre_kineto_pid(trace, PRE_KINETO_CUDA_PID)
    cuda_note = ("; its 'CUDA functions' lane is each op's CUDA time, not kernels, and is left out"
                 if cuda is not None else "")
    gpu_ops = _gpu_op_names(trace, ops)
    if gpu_ops:
        # KeondoPark/luxmea's export: aten::cudnn_convolution, 73% of its CPU time, ran on a GPU
        cuda_note += (f"; its ops ran on a GPU ({', '.join(gpu_ops[:3])}), whose work the export does not hold: "
                      "the verdict 'cpu-only' reads the host alone")
    trace.notices.append(
        f"a torch.autograd.profiler export from before Kineto (torch 1.x, pid '{PRE_KINETO_CPU_PID}'): its "
        f"{int(ops.sum()):,} ops are read as CPU ops; it records no GPU kernels, input shapes or steps, so "
        f"GPU time and shape-based findings are out of reach{cuda_note}. torch>=1.8.1's torch.profiler writes "
        "the full trace")


def _gpu_op_names(trace: Trace, ops: np.ndarray) -> list[str]:
    """The names among the `ops` that only a GPU run has, sorted."""
    return sorted({trace.names[int(n)] for n in np.unique(trace.name[ops]).tolist() if GPU_OP.search(trace.names[int(n)])})


def describe_other_json(data: bytes) -> str | None:
    """A line naming a known non-trace JSON (rocprofv3's, Triton proton's), or None."""
    try:
        top: Any = msgspec.json.decode(data, type=dict[str, msgspec.Raw] | list[msgspec.Raw])
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if isinstance(top, dict) and "rocprofiler-sdk-tool" in top:
        return ("JSON from rocprofiler-sdk (rocprofv3 --output-format json), not a torch.profiler trace: profile "
                "the program with torch.profiler (ROCm builds write the same trace) and pass that")
    if isinstance(top, list) and top and _hatchet(top[0]):
        return ("a Triton proton profile (a tree of frames and metrics), not a torch.profiler trace: pista reads "
                "torch.profiler traces (export_chrome_trace or tensorboard_trace_handler)")
    return None


def _hatchet(raw: msgspec.Raw) -> bool:
    try:
        first = msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return False
    return "frame" in first and "metrics" in first
