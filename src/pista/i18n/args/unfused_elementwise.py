"""unfused-elementwise: the arguments of its text (ftl/<lang>/unfused_elementwise.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import t
from pista.rules.unfused_elementwise import (
    GELU_SHARE,
    Chain,
    ChainKernel,
    Run,
    RunKernel,
    UnfusedElementwise,
    WrittenOut,
)

_DTYPE = {"float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16", "double": "fp64"}
# the idioms with a fused op of their own (the catalogue's fused-op-item names it)
FUSED = ("rmsnorm", "layernorm", "rotary", "gate")


def _short(ops: tuple[str, ...]) -> str:
    return " > ".join(o.removeprefix("aten::") for o in ops)


def _chain(c: Chain, say: Say) -> str:
    return say("chain-item", kernels=str(len(c.ops)), ops=_short(c.ops), shape="x".join(map(str, c.shape)),
               dtype=_DTYPE.get(c.dtype, c.dtype), count=str(c.count), us=t(c.us), tbps=f"{c.tbps:.2f}")


def _where(u: Run | None) -> dict[str, str]:
    module, frame = (u.module, u.frame) if u is not None else ("", "")
    return {"where": "both" if module and frame else "one" if module or frame else "none",
            "module": module, "frame": frame, "where_one": module or frame}


def _run(u: Run, say: Say) -> str:
    return say("run-item", idiom=key(u.idiom), ops=_short(u.ops), count=str(u.count), us=t(u.us), **_where(u))


def _chains_args(r: UnfusedElementwise | None) -> dict[str, str]:
    """The chains' own arguments ("" for a finding of code written out)."""
    c = r.chains[0] if r is not None and r.chains else None
    return {
        "kernels": f"{r.kernels_per_step:.0f}" if r else "", "chain_us": t(r.chain_us) if r else "",
        "gpu_share": f"{r.gpu_share_percent:.1f}" if r else "",
        "gelu": yes(r is not None and r.tanh_gelu_percent >= GELU_SHARE),
        "gelu_share": f"{r.tanh_gelu_percent:.0f}" if r else "",
        "chain_ops": " > ".join(c.ops) if c else "", "first_kernels": str(len(c.ops)) if c else "",
        "first_ops": _short(c.ops) if c else "", "first_us": t(c.us) if c else "",
    }


def _written_args(r: WrittenOut | None, say: Say) -> dict[str, str]:
    """The runs' own arguments ("" for a finding of chains)."""
    runs = r.runs[:3] if r is not None else ()
    names = list(dict.fromkeys(u.module for u in runs if u.module))
    fused = [i for i in dict.fromkeys(u.idiom for u in runs) if i in FUSED]
    u = runs[0] if runs else None
    return {
        "eager_us": t(r.eager_us) if r else "", "eager_share": f"{r.eager_percent:.0f}" if r else "",
        "runs_us": t(r.runs_us) if r else "", "runs_share": f"{r.gpu_share_percent:.0f}" if r else "",
        "runs": "; ".join(_run(x, say) for x in runs), "fused_us": t(r.fused_us) if r else "",
        "has_modules": yes(names), "modules": ", ".join(names),
        "has_fused": yes(fused), "fused_ops": "; ".join(say("fused-op-item", idiom=i) for i in fused),
        "idiom": key(u.idiom) if u else "other", **_where(u),
    }


def args(r: UnfusedElementwise | WrittenOut, say: Say) -> dict[str, str]:
    written = r if isinstance(r, WrittenOut) else None
    return {
        "form": "written" if written else "chains",
        "chains": "; ".join(_chain(c, say) for c in r.chains), "has_chains": yes(r.chains),
        "ceiling_tbps": f"{r.ceiling_tbps:.2f}", "ceiling_source": key(r.ceiling_source), "card": r.card,
        "saving_us": t(r.saving_us), "step_share": f"{r.step_share_percent:.1f}",
        **_chains_args(None if written else r), **_written_args(written, say),  # type: ignore[arg-type]
    }


NOTES = {
    RunKernel: lambda n, say: {"position": str(n.position), "length": str(n.length), "idiom": key(n.idiom),
                               "op": n.op},
    ChainKernel: lambda n, say: {"position": str(n.position), "length": str(n.length), "op": n.op,
                                 "tbps": f"{n.tbps:.2f}"},
}
