"""cuDNN calls that set up a new shape on the host: not a rule.

cudnn-setup reports them; the GPU-idle ledger (`_idle`) gives their idle to that rule before any
other cause, and host-sync and allocator-churn leave the syncs and allocations inside them to it.
"""

from __future__ import annotations

import re
from typing import cast

import numpy as np

from pista.query import nearest_in, pattern_mask
from pista.rules._common import idle_ns_in, index_mask, step_at
from pista.trace.facts import Facts, per_facts

# the thresholds below are cudnn-setup's (`pista explain cudnn-setup`, [tool.pista.rules.cudnn-setup])
THRESHOLDS_OF = "cudnn-setup"

# The ops cuDNN sets up inside (torch 2.x names): convolutions, SDPA's cuDNN attention, RNNs.
CUDNN_OPS = re.compile(r"^aten::(_?cudnn_\w+|_scaled_dot_product_cudnn_attention\w*)$")
# The convolutions' backward has no cuDNN name of its own; it is cuDNN's where the forward is.
CONV_BACKWARD = re.compile(r"^aten::convolution_backward$")
# A call must hold the GPU idle this long: gpu/kv_decode's slow attention calls ~70 ms,
# gpu/multiscale_plain's convolutions 1-6 ms; a launch-only call takes 20-250 µs in every warm
# fixture (gpu/resnet50_bf16's cudnn_convolution ~40 µs).
SETUP_MIN_US = 500.0
# The setup must recur: slow calls in at least this many steps (one is a first call).
MIN_STEPS = 2


@per_facts
def slow_calls(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """The outermost cuDNN op calls that hold the GPU idle SETUP_MIN_US or more, in time order,
    and the ns of idle in each, where they recur (in MIN_STEPS steps; one call is a first call):
    also what the GPU-idle ledger gives cudnn-setup before anyone else."""
    trace = facts.trace
    none = np.empty(0, np.int64)
    if not facts.has_gpu:
        return none, none
    ops = facts.is_host & pattern_mask(facts, CUDNN_OPS)
    if not ops.any():
        return none, none
    ops |= facts.is_host & pattern_mask(facts, CONV_BACKWARD)
    if facts.steps:
        ops &= facts.event_step >= 0
    idx = np.flatnonzero(ops & (trace.dur >= SETUP_MIN_US * 1000))
    idx = idx[nearest_in(facts, ops, idx, inclusive=False) < 0]  # attention's forward under SDPA's
    idle = idle_ns_in(facts, idx)
    keep = idle >= SETUP_MIN_US * 1000
    idx, idle = idx[keep], idle[keep]
    if recurring_steps(facts, idx) is None:
        return none, none
    order = np.argsort(trace.ts[idx], kind="stable")
    return idx[order].astype(np.int64), idle[order].astype(np.int64)


def recurring_steps(facts: Facts, idx: np.ndarray) -> tuple[int, ...] | None:
    """The steps the calls fall in, sorted; None unless they recur (two calls, in MIN_STEPS steps)."""
    if idx.size < 2:
        return None
    steps = cast("set[int]", {step_at(facts, int(t)) for t in facts.trace.ts[idx].tolist()} - {None})
    return tuple(sorted(steps)) if not facts.steps or len(steps) >= MIN_STEPS else None


def inside(facts: Facts, calls: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per event of `at`: the call of `calls` above it in the op tree (-1: none)."""
    return nearest_in(facts, index_mask(facts, calls), at, inclusive=False)
