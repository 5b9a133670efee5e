"""many-calls in English."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.rules.many_calls import ManyCalls, OneOfMany, RepeatedCall

TITLE = "Ops called very many times per step: their per-call cost adds up"

SOURCE = {
    "loop": "a loop of calls",
    "optimizer": "in the optimizer's step",
    "cast": "dtype casts",
    "compiled": "in compiled code",
}

ADVICE = {
    "loop": ("Batch the loop: one op on a stacked tensor (torch.stack, torch._foreach_*) instead of one call per "
             "slice, or torch.compile the loop so the calls fuse."),
    "optimizer": "Pass fused=True to the optimizer (Adam, AdamW, SGD): its update becomes one kernel per group.",
    "cast": ("These are dtype casts every step (autocast casting fp32 weights): keep the weights in the compute "
             "dtype (model.to(torch.bfloat16)), or torch.compile the step so the casts fuse."),
    "compiled": "They run inside compiled code: capture it as a CUDA graph (torch.compile(mode='reduce-overhead')).",
}

ACTION = {
    "loop": "batch the calls into one op on stacked tensors or torch.compile the loop",
    "optimizer": "pass fused=True to the optimizer",
    "cast": "keep the weights in bf16 or torch.compile the step",
    "compiled": "capture the step as a CUDA graph (mode='reduce-overhead')",
}


def _step(r: ManyCalls) -> str:
    return "step" if r.has_steps else "window"


def _call(c: RepeatedCall, r: ManyCalls) -> str:
    hidden = f"{t(c.idle_us_per_step)} of it with the GPU idle" if r.has_gpu else f"{t(c.idle_us_per_step)} of host time"
    if c.kind == "kernel":  # its launch calls and the device's time apart: a sum of both is no GPU time
        return (f"kernel {c.name} {c.calls_per_step:.0f}x per {_step(r)} ({SOURCE[c.source]}): "
                f"{t(c.launch_us_per_step)} of launch calls and {t(c.gpu_us_per_step)} on the GPU per {_step(r)}, "
                f"{hidden}")
    return (f"op {c.name} {c.calls_per_step:.0f}x per {_step(r)} "
            f"({SOURCE[c.source]}), {t(c.avg_us)} each, {t(c.cost_us_per_step)} per {_step(r)}, {hidden}")


def message(r: ManyCalls) -> str:
    whole = r.mean_step_us or r.step_us  # the per-step figures are means over the steps: so is their whole
    share = pct(min(r.idle_us_per_step / whole, 1.0)) if whole else "0.0%"
    what = ("the GPU waits while the host is inside them" if r.has_gpu else "the host spends in them")
    return (f"{len(r.calls)} op(s) called very many times per {_step(r)}: " + "; ".join(_call(c, r) for c in r.calls)
            + f". Together {what}: {t(r.idle_us_per_step)} per {_step(r)}, {share} of the {t(whole)} "
            + ("mean step." if r.has_steps else "window."))


def advice(r: ManyCalls) -> str:
    sources = list(dict.fromkeys(c.source for c in r.calls))
    return (" ".join(ADVICE[s] for s in sources)
            + (" A CUDA graph of the whole step also pays the per-call cost once." if r.has_gpu and not r.graphed
               else ""))


def fix(r: ManyCalls) -> str:
    c = r.calls[0]
    cost = f"{t(c.idle_us_per_step)} of GPU idle" if r.has_gpu else f"{t(c.idle_us_per_step)} of host time"
    return (f"{c.name} is called {c.calls_per_step:.0f}x per {_step(r)} ({SOURCE[c.source]}), {cost} per {_step(r)}: "
            f"{ACTION[c.source]}")


def basis(r: ManyCalls) -> str:
    if not r.has_gpu:
        return "host time of the listed calls, per step (no GPU to hide their cost behind); upper bound"
    return ("GPU idle while the host is inside the listed calls, per step, without idle other findings claim (syncs, "
            "data loading, compiling, tiny kernels' launches); upper bound: a batched call still costs one call")


NOTES = {
    OneOfMany: lambda n: f"one of {n.calls_per_step:.0f} calls " + ("per step" if n.steps else "in the window"),
}
