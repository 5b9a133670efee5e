"""unfused-epilogue: the arguments of its text (ftl/<lang>/unfused_epilogue.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import t
from pista.rules.unfused_epilogue import EpilogueCall, EpiloguePair, GemmCall, UnfusedEpilogue


def _shape(s: tuple[int, ...] | None) -> str:
    return "x".join(map(str, s)) if s else ""


def _pair(p: EpiloguePair, say: Say) -> str:
    return say("pair-item", op=p.op, kind=key(p.kind), has_other=yes(p.other_shape), other_shape=_shape(p.other_shape),
               has_out=yes(p.out_shape), out_shape=_shape(p.out_shape), gemm=p.gemm, has_parent=yes(p.parent),
               parent=p.parent, calls=f"{p.calls_per_step:.0f}", us=t(p.elementwise_us), gemm_us=t(p.gemm_us))


# the `kinds` selector by whether the pairs hold a bias, and an activation
_KINDS = {(True, True): "both", (True, False): "bias", (False, True): "activation", (False, False): "none"}
# the first pair's arguments where there is none
_NO_PAIR = {"op": "", "gemm": "", "kind": "none", "has_parent": "no", "parent": "", "pair_us": ""}


def _kinds(r: UnfusedEpilogue) -> str:
    kinds = {p.kind for p in r.pairs}
    return _KINDS["bias" in kinds, "activation" in kinds]


def _first_pair(p: EpiloguePair) -> dict[str, str]:
    return {"op": p.op, "gemm": p.gemm, "kind": key(p.kind), "has_parent": yes(p.parent), "parent": p.parent,
            "pair_us": t(p.elementwise_us)}


def args(r: UnfusedEpilogue, say: Say) -> dict[str, str]:
    return {
        "pairs": "; ".join(_pair(x, say) for x in r.pairs), "us": t(r.elementwise_us),
        "gpu_share": f"{r.gpu_share_percent:.1f}", "step_share": f"{r.step_share_percent:.1f}", "kinds": _kinds(r),
        **(_first_pair(r.pairs[0]) if r.pairs else _NO_PAIR),
    }


NOTES = {
    GemmCall: lambda n, say: {"kernel_us": t(n.kernel_us)},
    EpilogueCall: lambda n, say: {"kind": key(n.kind), "gemm": n.gemm, "kernel_us": t(n.kernel_us)},
}
