"""Elementwise code written out op by op: runs of eager kernels launched by several distinct primitive
ops (mul, pow, mean, rsqrt, cat, neg, silu, casts...) back to back on one stream, as an RMSNorm, a
rotary embedding or a gated activation written in tensor arithmetic runs without torch.compile: not a
rule.

unfused-elementwise reports them beside its same-shape chains.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence

import numpy as np

from pista.finding import NOT_USER_FRAME
from pista.purpose import CODE, classify
from pista.query import name_mask, nearest_ancestor, pattern_mask
from pista.rules._common import COMPILED_REGION
from pista.trace.facts import Facts

# the thresholds below are unfused-elementwise's (`pista explain unfused-elementwise`)
THRESHOLDS_OF = "unfused-elementwise"

# The ops user code writes elementwise arithmetic, reductions and casts with, each one kernel in eager mode
# (a native fused op such as native_layer_norm, gelu_backward or a batch norm is one pass already: the healthy
# pairs' eager GPT and ResNet are made of those and stay out).
PRIMITIVE_OPS = frozenset("aten::" + n for n in (
    "add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "neg", "pow", "rsqrt", "sqrt",
    "reciprocal", "exp", "log", "tanh", "sigmoid", "silu", "relu", "clamp", "clamp_min", "clamp_max", "where",
    "masked_fill", "masked_fill_", "mean", "sum", "var", "amax", "cat", "copy_", "_to_copy", "cos", "sin",
    "abs", "square", "maximum", "minimum"))
# At least this many kernels in a run: RMSNorm written out is 6-9 (tl_h100_qwen05: add > copy_ > pow > mean >
# add > rsqrt > mul > copy_ > mul), a rotary embedding 5 per tensor (mul > neg > cat > mul > add), a SiLU gate
# with its casts 4 (savings/elementwise_rmsnorm: copy_ > silu > copy_ > mul). A shorter run (an affine + ReLU:
# the vmapped eval BatchNorm of savings/h100/loop_ensemble_cnn's fixed twin, mul > add > clamp_min) is common
# in healthy code and gains little.
MIN_RUN_KERNELS = 4
# ... of at least this many distinct ops: a run of one or two ops is a loop over tensors (gradients cast one by
# one under autocast: sum > copy_ > copy_ > copy_), the business of autocast-casts and unfused-optimizer.
MIN_RUN_KINDS = 3
# ... and distinct ops at least this share of its kernels: savings/h100/optim_manual_sgd's per-parameter
# update is 40 kernels of 3 ops (sum, then mul_ > add_ > add_ per parameter), a loop, not written-out code;
# tl_h100_qwen05's rotary run (q and k, then 3 copies) is 5 ops in 13 kernels.
MIN_KINDS_SHARE = 0.25
# Kernels already made by a compiler, or fused over many tensors at once.
FUSED_KERNEL = re.compile(r"^triton_|multi_tensor_apply|foreach", re.I)
MODULE_EVENT = re.compile(r"^nn\.Module: (.+?)(?:_\d+)?$")
PURPOSES = ("elementwise", "reduction", "cast")


def stream_work(facts: Facts) -> Iterator[np.ndarray]:
    """Per GPU stream, its device work in start order: the device work of facts.lanes' "gpu" lanes,
    sorted alone (the lanes sort every event: 22 MiB kept on a 1 GB trace, for this rule only)."""
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work)
    work = work[np.lexsort((trace.ts[work], trace.tid[work], trace.pid[work]))]
    pid, tid = trace.pid[work], trace.tid[work]
    bounds = np.flatnonzero((pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])) + 1
    overhead = np.flatnonzero(facts.is_overhead)  # a lane with any is the overhead lane
    not_gpu = set(zip(trace.pid[overhead].tolist(), trace.tid[overhead].tolist(), strict=True))
    for chunk in np.split(work, bounds) if work.size else []:
        lane = (int(trace.pid[chunk[0]]), int(trace.tid[chunk[0]]))
        if lane[0] != -1 and lane not in not_gpu:
            yield chunk


def eligible(facts: Facts, excluded: np.ndarray) -> np.ndarray:
    """Mask: the steps' eager elementwise, reduction and cast kernels launched by a primitive op outside any
    compiled region, less `excluded` (kernel indices other rules explain)."""
    trace = facts.trace
    codes = classify(facts)
    owner = facts.owner
    mask = np.isin(codes, [CODE[p] for p in PURPOSES]) & (owner >= 0) & ~pattern_mask(facts, FUSED_KERNEL)
    if facts.steps:
        mask &= facts.event_step >= 0
    idx = np.flatnonzero(mask)
    ops = owner[idx]
    primitive = name_mask(facts, PRIMITIVE_OPS)[ops]
    compiled = nearest_ancestor(facts, facts.is_host & pattern_mask(facts, COMPILED_REGION))
    keep = idx[primitive & (compiled[ops] < 0)]
    out = np.zeros(len(trace), dtype=bool)
    out[keep] = True
    out[excluded] = False
    return out


def runs(facts: Facts, mask: np.ndarray) -> list[np.ndarray]:
    """Runs of kernels in `mask` back to back on their stream in one step (nothing else between them) that
    look like written-out code: MIN_RUN_KERNELS or more, of MIN_RUN_KINDS distinct ops or more, and distinct
    ops MIN_KINDS_SHARE of the kernels or more."""
    out: list[np.ndarray] = []
    steps = facts.event_step
    for work in stream_work(facts):
        inside = mask[work]
        # a new run starts at each kernel in the mask whose predecessor is not, or is in another step
        start = inside & ~np.concatenate(([False], inside[:-1] & (steps[work[1:]] == steps[work[:-1]])))
        firsts = np.flatnonzero(start)
        for first in firsts.tolist():
            last = first
            while last + 1 < work.size and inside[last + 1] and steps[work[last + 1]] == steps[work[first]]:
                last += 1
            run = work[first:last + 1]
            if run.size >= MIN_RUN_KERNELS and _looks_written_out(facts, run):
                out.append(run)
    return out


def _looks_written_out(facts: Facts, run: np.ndarray) -> bool:
    kinds = len({op.rstrip("_") for op in op_names(facts, run)})
    return kinds >= MIN_RUN_KINDS and kinds >= MIN_KINDS_SHARE * run.size


def op_names(facts: Facts, run: np.ndarray) -> tuple[str, ...]:
    """The ops that launched the run's kernels, in order."""
    trace = facts.trace
    return tuple(trace.event_name(int(op)) for op in facts.owner[run].tolist())


def idiom(ops: Sequence[str]) -> str:
    """What the ops compute, by their names: rmsnorm | layernorm | rotary | gate | other."""
    names = {o.removeprefix("aten::").rstrip("_") for o in ops}
    if "mean" in names and names & {"rsqrt", "sqrt"}:
        return "layernorm" if "sub" in names else "rmsnorm"
    if {"cat", "neg"} <= names and names & {"mul"}:
        return "rotary"
    if names & {"silu", "sigmoid", "tanh", "relu"} and "mul" in names:
        return "gate"
    return "other"


def location(facts: Facts, run: np.ndarray) -> tuple[str, str]:
    """The innermost nn.Module class and user frame ("file.py(line): function") holding most of the run's
    kernel time ("" where the trace has no stacks)."""
    trace = facts.trace
    python = trace.category_id("python_function")
    if python < 0:
        return "", ""
    time: Counter[tuple[str, str]] = Counter()
    for kernel, op in zip(run.tolist(), facts.owner[run].tolist(), strict=True):
        time[_where(facts, op, python)] += int(trace.dur[kernel])
    return time.most_common(1)[0][0]


def _where(facts: Facts, op: int, python: int) -> tuple[str, str]:
    trace = facts.trace
    module = frame = ""
    j = int(facts.parent[op])
    while j >= 0 and not (module and frame):
        if int(trace.cat[j]) == python:
            name = trace.event_name(j)
            found = MODULE_EVENT.match(name)
            if found and not module:
                module = found.group(1)
            elif not found and not frame and not NOT_USER_FRAME.search(name):
                frame = name.rsplit("/", 1)[-1]
        j = int(facts.parent[j])
    return module, frame
