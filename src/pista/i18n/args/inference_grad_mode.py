"""inference-grad-mode: the arguments of its text (ftl/<lang>/inference_grad_mode.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, step_lead, yes
from pista.i18n._fmt import num, t
from pista.rules.inference_grad_mode import InferenceGradMode, NodeOp


def args(r: InferenceGradMode, say: Say) -> dict[str, str]:
    return {
        "lead": step_lead(r.has_steps, r.steps, r.of_steps), "steps": str(r.steps), "of_steps": str(r.of_steps), "nodes": f"{r.nodes_per_step:.0f}",
        "top": ", ".join(say("top-item", name=b.name, per_step=f"{b.per_step:.0f}") for b in r.top),
        "cost_us": t(r.nodes_per_step * r.node_us * r.inflation), "capped": yes(r.capped),
        "idle_us": t(r.idle_us_per_step), "cache": yes(r.cache_keeps_graphs), "malloc_steps": str(r.malloc_steps),
        "growing_op": r.growing_op, "gpu": yes(r.gpu), "node_us": num(r.node_us, 2),
        "inflation": f"{r.inflation:.0f}",
    }


NOTES = {
    NodeOp: lambda n, say: {"seq": str(n.seq)},
}
