"""unfused-elementwise: the arguments of its text (ftl/<lang>/unfused_elementwise.ftl)."""

from __future__ import annotations

import itertools

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


def _joined(ops: tuple[str, ...], prefix: str = "") -> str:
    """The ops joined by " > ", a run of one op written once with its count (review 6: gp_d2h_sync_final's 168
    `add_` in a row were printed 168 times)."""
    parts = []
    for name, group in itertools.groupby(o.removeprefix(prefix) for o in ops):
        n = sum(1 for _ in group)
        parts.append(f"{name} x{n}" if n > 1 else name)
    return " > ".join(parts)


def _short(ops: tuple[str, ...]) -> str:
    return _joined(ops, "aten::")


def _chain(c: Chain, say: Say) -> str:
    return say("chain-item", kernels=str(len(c.ops)), ops=_short(c.ops), shape="x".join(map(str, c.shape)),
               dtype=_DTYPE.get(c.dtype, c.dtype), count=str(c.count), us=t(c.us), tbps=f"{c.tbps:.2f}")


# the `where` selector by how many of the module and the frame the run has
_WHERE = ("none", "one", "both")


def _where(u: Run | None) -> dict[str, str]:
    module, frame = (u.module, u.frame) if u is not None else ("", "")
    return {"where": _WHERE[bool(module) + bool(frame)],
            "module": module, "frame": frame, "where_one": module or frame}


def _run(u: Run, say: Say) -> str:
    return say("run-item", idiom=key(u.idiom), ops=_short(u.ops), count=str(u.count), us=t(u.us), **_where(u))


# a finding of code written out has no chains, a finding of chains no runs: their arguments are then empty
_NO_CHAINS = {**dict.fromkeys(("kernels", "chain_us", "gpu_share", "gelu_share"), ""), "gelu": "no"}
_NO_FIRST_CHAIN = dict.fromkeys(("chain_ops", "first_kernels", "first_ops", "first_us"), "")
_NO_RUNS = {**dict.fromkeys(("eager_us", "eager_share", "runs_us", "runs_share", "runs", "fused_us", "modules",
                             "fused_ops"), ""),
            "has_modules": "no", "has_fused": "no", "idiom": "other", **_where(None)}


def _first_chain_args(c: Chain) -> dict[str, str]:
    return {"chain_ops": _joined(c.ops), "first_kernels": str(len(c.ops)), "first_ops": _short(c.ops),
            "first_us": t(c.us)}


def _chains_args(r: UnfusedElementwise | None) -> dict[str, str]:
    """The chains' own arguments ("" for a finding of code written out)."""
    if r is None:
        return {**_NO_CHAINS, **_NO_FIRST_CHAIN}
    return {
        "kernels": f"{r.kernels_per_step:.0f}", "chain_us": t(r.chain_us), "gpu_share": f"{r.gpu_share_percent:.1f}",
        "gelu": yes(r.tanh_gelu_percent >= GELU_SHARE), "gelu_share": f"{r.tanh_gelu_percent:.0f}",
        **(_first_chain_args(r.chains[0]) if r.chains else _NO_FIRST_CHAIN),
    }


def _fused_idioms(runs: tuple[Run, ...]) -> list[str]:
    """The runs' idioms that have a fused op of their own, once each, in the runs' order."""
    return [i for i in dict.fromkeys(u.idiom for u in runs) if i in FUSED]


def _written_args(r: WrittenOut | None, say: Say) -> dict[str, str]:
    """The runs' own arguments ("" for a finding of chains)."""
    if r is None:
        return _NO_RUNS
    runs = r.runs[:3]
    names = list(dict.fromkeys(u.module for u in runs if u.module))
    fused = _fused_idioms(runs)
    u = runs[0] if runs else None
    return {
        "eager_us": t(r.eager_us), "eager_share": f"{r.eager_percent:.0f}",
        "runs_us": t(r.runs_us), "runs_share": f"{r.gpu_share_percent:.0f}",
        "runs": "; ".join(_run(x, say) for x in runs), "fused_us": t(r.fused_us),
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
