"""inference-grad-mode in English."""

from __future__ import annotations

from pista.i18n._fmt import num, t
from pista.rules.inference_grad_mode import BuildsNodes, InferenceGradMode, NodeOp

TITLE = "Inference runs in grad mode: every op builds an autograd node"


def _top(top: tuple[BuildsNodes, ...]) -> str:
    return ", ".join(f"{b.name} {b.per_step:.0f}" for b in top)


def message(r: InferenceGradMode) -> str:
    cap = (f", at most the GPU idle while the host dispatches in those steps ({t(r.idle_us_per_step)})"
           if r.capped else "")
    lead = ("The trace holds no ProfilerStep and no backward (if the program trains and its backward ran outside the "
            "profiled window, this does not apply)" if not r.has_steps
            else "No step runs a backward" if r.steps == r.of_steps
            else f"{r.steps} of the {r.of_steps} steps run no backward")
    return (f"{lead}, yet the ops record autograd nodes: {r.nodes_per_step:.0f} a "
            f"step ({_top(r.top)}), so the loop runs outside torch.inference_mode() and torch.no_grad(). Each node "
            f"is host work inside its op, about {t(r.nodes_per_step * r.node_us * r.inflation)} a step as profiled"
            f"{cap}; and the forward keeps every activation it saves for a backward that never runs{_cache(r)}. "
            "On the H200, unprofiled, inference_mode took GPT-2 decoding "
            "from 6.21 to 4.94 ms a token and ResNet-50 at batch 32 from 5.20 to 4.22 ms a step (19-20%), and "
            "ResNet-50's peak memory from 1434 to 267 MiB (GPT-2's 375 to 359)." + _cpu(r))


def _cache(r: InferenceGradMode) -> str:
    if not r.cache_keeps_graphs:
        return ""
    return (f" (memory grows: {r.malloc_steps} of {r.steps} steps call cudaMalloc, and {r.growing_op}'s input grows "
            "step after step: a cache kept across steps carries the autograd graph of every earlier step)")


def _cpu(r: InferenceGradMode) -> str:
    return "" if r.gpu else " On a CPU, a 16-block MLP took 715 µs a step in grad mode against 613-623 µs."


def advice(r: InferenceGradMode) -> str:
    return ("Run the loop under `with torch.inference_mode():` around the model calls (torch.no_grad() where its "
            "tensors must meet autograd later), with model.eval() as well; transformers' generate() does this "
            "itself, a hand-written decoding loop does not.")


def fix(r: InferenceGradMode) -> str:
    return (f"inference runs in grad mode ({r.nodes_per_step:.0f} autograd nodes a step): wrap it in "
            "torch.inference_mode().")


def basis(r: InferenceGradMode) -> str:
    cap = ", at most the GPU idle while the host dispatches in those steps" if r.capped else ""
    source = "the median of the H200 twins: 2.75-8.2 µs" if r.gpu else "a CPU MLP's twins, without a GPU"
    return (f"the autograd nodes a step times {num(r.node_us, 2)} µs each (unprofiled, {source}) times "
            f"{r.inflation:.0f} for the profiler's inflation of host time{cap}; memory not counted")


NOTES = {
    NodeOp: lambda n: f"builds autograd node (Sequence number {n.seq})",
}
