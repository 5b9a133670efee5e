"""compile-overhead: the arguments of its text (ftl/<lang>/compile_overhead.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t, t_or_blank
from pista.rules.compile_overhead import CompileOverhead, GuardCheck, WrapperCall

_EVALUATE = "autograd::engine::evaluate_function: "


def _change(r: CompileOverhead) -> str:
    if r.op_by_op_ops:
        return "op-by-op"
    if r.eager_ops:
        return "eager"
    return "dominates" if r.wrapper_dominates else "graphs"


def args(r: CompileOverhead, say: Say) -> dict[str, str]:
    return {
        "calls": str(r.calls), "regions": ", ".join(r.regions), "single": yes(len(r.regions) == 1),
        "region": r.regions[0] if r.regions else "",
        "op_by_op": yes(r.op_by_op_ops), "ops": str(r.op_by_op_ops),
        "wrapper_us": t(r.wrapper_us), "call_us": t(r.wrapper_us_per_call), "gpu_us": t(r.gpu_us_per_call),
        "exposed_us": t(r.exposed_us), "step_us": t(r.exposed_per_step_us), "share": f"{r.step_share_percent:.1f}",
        "profiler": yes(r.profiler_may_explain), "backward": yes(r.backward), "change": _change(r),
        "eager_ops": ", ".join(n.removeprefix(_EVALUATE) for n in r.eager_ops), "eager_idle_us": t(r.eager_idle_us),
    }


NOTES = {
    WrapperCall: lambda n, say: {"host_us": t(n.host_us), "between_ops": yes(n.between_ops),
                                 "has_lookup": yes(n.lookup_us is not None),
                                 "lookup_us": t_or_blank(n.lookup_us),
                                 "exposed_us": t(n.exposed_us), "gpu_us": t(n.gpu_us)},
    GuardCheck: lambda n, say: {"lookup_us": t(n.lookup_us)},
}
