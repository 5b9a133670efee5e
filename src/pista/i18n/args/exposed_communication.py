"""exposed-communication: the arguments of its text (ftl/<lang>/exposed_communication.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import pct, t
from pista.rules.exposed_communication import (
    ExposedCall,
    ExposedCommunication,
    LatePeer,
    SetupCall,
    WaitingCall,
)

# the collectives' names, the same in every language
KINDS = {"all_reduce": "all-reduce", "all_to_all": "all-to-all", "all_gather": "all-gather",
         "reduce_scatter": "reduce-scatter", "broadcast": "broadcast"}
_SHARDS = ("all_gather", "reduce_scatter")
_KIND_FIX = ("all_to_all", "all_gather", "reduce_scatter", "broadcast")  # a fix of their own; else all-reduce's


def _share(r: ExposedCommunication, us: float) -> str:
    return pct(min(1.0, us / max(r.step_us, 1e-9)))


def _moved(r: ExposedCommunication, say: Say) -> str:
    """What the top collective moves (its dtype, its MiB a call), as far as the trace says."""
    parts = [r.dtype] if r.dtype else []
    if r.message_bytes:
        parts.append(say("mib-item", mib=f"{r.message_bytes / 2**20:.1f}"))
    return ", ".join(parts)


def _parallel_case(r: ExposedCommunication) -> str:
    """The case both the advice and the fix take first: tensor parallelism's collective ("tp"), a shard's
    collective outside FSDP ("shard"); "" for neither."""
    if r.role == "tp":
        return "tp"
    return "shard" if r.role != "fsdp" and r.kind in _SHARDS else ""


def _own_case(r: ExposedCommunication) -> str:
    """Whose the top collective is, which picks its advice."""
    if case := _parallel_case(r):
        return case
    if r.kind in ("all_to_all", "broadcast"):
        return r.kind
    if r.kind in _SHARDS:
        return "fsdp"
    return "gpu" if r.domain == "gpu" else "host"


def _fix_case(r: ExposedCommunication) -> str:
    return _parallel_case(r) or (r.kind if r.kind in _KIND_FIX else "all_reduce")


def _waits_most(r: ExposedCommunication) -> bool:
    """Whether the calls that wait for another rank are most of the exposure (its first fix)."""
    return r.wait is not None and r.late_peer is None and r.wait.exposed_us >= 0.5 * r.exposed_us


def _late(late: LatePeer | None) -> dict[str, str]:
    if late is None:
        return {"has_late": "no", "late_rank": "", "late_wait_us": ""}
    return {"has_late": "yes", "late_rank": str(late.rank), "late_wait_us": t(late.wait_us)}


# the arguments of the waiting calls where none waits for another rank
_NO_WAIT = {"has_wait": "no", "wait_many": "no", "wait_calls": "", "wait_has_kind": "no", "wait_kind": "",
            "wait_dur_us": "", "wait_median_us": "", "wait_siblings": ""}


def _wait(r: ExposedCommunication) -> dict[str, str]:
    w = r.wait
    if w is None:
        return {**_NO_WAIT, "wait_exposed_us": t(0.0)}
    return {
        "has_wait": "yes", "wait_many": yes(w.calls > 1), "wait_calls": str(w.calls),
        "wait_has_kind": yes(w.kind), "wait_kind": KINDS.get(w.kind, w.kind),
        "wait_dur_us": t(w.dur_us), "wait_median_us": t(w.median_us),
        "wait_siblings": str(w.siblings), "wait_exposed_us": t(w.exposed_us),
    }


def args(r: ExposedCommunication, say: Say) -> dict[str, str]:
    late = r.late_peer
    moved = _moved(r, say)
    a = {
        "exposed_us": t(r.exposed_us), "share": _share(r, r.exposed_us), "step_us": t(r.step_us),
        "comm_us": t(r.comm_us), "domain": "gpu" if r.domain == "gpu" else "host",
        "collectives": str(r.collectives), "steps": str(r.steps), "overlap": pct(r.overlap_share),
        "collective": r.collective, "many_kinds": yes(len(r.kinds) > 1),
        "kinds": ", ".join(say("kind-item", kind=KINDS[k], us=t(v)) for k, v in r.kinds),
        "own_exposed_us": t(r.own_exposed_us),
        "tp": yes(r.role == "tp"), "moved": moved, "has_moved": yes(moved),
        "redistributes": f"{r.redistributes:.0f}", "forward_only": yes(r.forward_only),
        "has_setup": yes(r.setup_us > 0), "setup_us": t(r.setup_us), "setup_ratio": f"{r.setup_ratio:.1f}",
        "kind_name": KINDS.get(r.kind, r.kind), "bf16": yes(r.dtype in ("fp32", "fp64", "")),
        "own_case": _own_case(r), "fix_case": _fix_case(r),
        "fix_kind": yes(r.kind in _KIND_FIX or (r.kind and r.role == "tp")),
        "waits_most": yes(_waits_most(r)), "last_bucket": yes(r.kind in ("all_reduce", "")),
        "advice_case": "late" if late else "wait" if _waits_most(r) else "own",
        **_late(late), **_wait(r),
    }
    own = say("own-advice", **a)
    return {**a, "own_cap": own[:1].upper() + own[1:]}  # the advice's first letter, where it opens the sentence


NOTES = {
    ExposedCall: lambda n, say: {"exposed_us": t(n.exposed_us), "dur_us": t(n.dur_us)},
    WaitingCall: lambda n, say: {"ratio": f"{n.dur_us / max(n.median_us, 1e-9):.0f}", "median_us": t(n.median_us)},
    SetupCall: lambda n, say: {"ratio": f"{n.dur_us / max(n.median_us, 1e-9):.1f}", "median_us": t(n.median_us)},
}
