"""launch-bound's static_first, in English: overhead-bound's Python text imports it.

FALLBACK: launch-bound's own text is in ftl/<lang>/launch_bound.ftl (its `static-first` says the same); delete
this module when overhead-bound is converted.
"""

from __future__ import annotations


def static_first(r) -> str:
    """The CUDA graph's condition, where the steps' shapes change (launch-bound, overhead-bound)."""
    if not r.new_shape_op:
        return ""
    return (f" The shapes change every step ({r.new_shape_op}: {r.new_shape_calls_per_step:.0f} calls per step on a "
            "shape no other step in the window has): a CUDA graph replays fixed shapes, so make them static first "
            "(a preallocated static KV cache where a sequence grows, padded or bucketed lengths), or torch.compile "
            "recompiles and records a graph per shape.")
