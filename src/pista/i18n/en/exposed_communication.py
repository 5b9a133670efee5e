"""exposed-communication in English."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.rules.exposed_communication import ExposedCall, ExposedCommunication


def _where(r: ExposedCommunication) -> str:
    return "on the GPU" if r.domain == "gpu" else "on gloo's threads"


def _share(r: ExposedCommunication, us: float) -> str:
    return pct(min(1.0, us / max(r.step_us, 1e-9)))


TITLE = "Exposed communication: steps wait for collectives"


def message(r: ExposedCommunication) -> str:
    text = (f"{t(r.exposed_us)} of communication per step runs with no compute beside it: "
            f"{_share(r, r.exposed_us)} of a {t(r.step_us)} step. Of {t(r.comm_us)} of collectives per step "
            f"{_where(r)} ({r.collectives} events in {r.steps} step(s)), {pct(r.overlap_share)} overlap compute; "
            f"{r.collective} exposes the most.")
    if len(r.kinds) > 1:
        text += " By collective, per step: " + ", ".join(f"{KINDS[k]} {t(v)}" for k, v in r.kinds) + "."
    if r.late_peer is not None:
        text += (f" {t(r.late_peer.wait_us)} of it is this rank waiting for rank {r.late_peer.rank}, which comes "
                 f"late (see straggler); {t(r.own_exposed_us)} is its own.")
    return text


KINDS = {"all_reduce": "all-reduce", "all_to_all": "all-to-all", "all_gather": "all-gather",
         "reduce_scatter": "reduce-scatter", "broadcast": "broadcast"}


def _kind_advice(r: ExposedCommunication) -> str:
    """The advice for a collective that is not a gradient all-reduce ("" for an all-reduce or one unnamed)."""
    if r.kind == "all_to_all":
        return (f"this all-to-all ({r.collective}) is TorchRec's input and embedding distribution or a mixture of "
                "experts' token exchange, not a gradient all-reduce, so DDP's bucket settings do not touch it: overlap "
                "it with compute by pipelining the input distribution, so the next batch's all-to-all runs during this "
                "batch's forward and backward (TorchRec's TrainPipelineSparseDist), and compare the ranks: a rank with "
                "more ids or tokens to send makes every other wait")
    if r.kind in ("all_gather", "reduce_scatter"):
        return (f"this {KINDS[r.kind]} ({r.collective}) moves FSDP's or ZeRO's parameters and gradients: prefetch the "
                "next unit's parameters while this one computes (FSDP forward_prefetch=True and "
                "backward_prefetch=BackwardPrefetch.BACKWARD_PRE; FSDP2 set_modules_to_forward_prefetch and "
                "set_modules_to_backward_prefetch), and wrap fewer, larger units so each collective moves more")
    if r.kind == "broadcast":
        return (f"this broadcast ({r.collective}): if it is DDP's buffers (batch norm's statistics) sent at every "
                "forward, set broadcast_buffers=False where the ranks keep them in step (or use SyncBatchNorm); "
                "otherwise issue it with async_op=True and wait for it only where its result is needed")
    return ""


def _own_advice(r: ExposedCommunication) -> str:
    if _kind_advice(r):
        return _kind_advice(r)
    if r.domain == "gpu":
        return (f"let {r.collective} overlap the backward: tune DDP's bucket_cap_mb so the first buckets start "
                "while backward still runs, keep gradient_as_bucket_view=True, accumulate gradients under no_sync() "
                "to all-reduce once every N micro-batches, or shard with FSDP and prefetch")
    return (f"{r.collective} runs on gloo's CPU threads beside the compute it should hide behind "
            f"({pct(r.overlap_share)} overlapped): accumulate gradients under no_sync() to all-reduce once every "
            "N steps, use bigger buckets (bucket_cap_mb) for fewer, larger messages, or train on GPUs with NCCL")


def advice(r: ExposedCommunication) -> str:
    own = _own_advice(r)
    if r.late_peer is not None:
        return (f"Rank {r.late_peer.rank} comes late and this rank waits {t(r.late_peer.wait_us)} per step for it: "
                f"fix that rank first (see straggler). For the other {t(r.own_exposed_us)}, {own}.")
    return own[0].upper() + own[1:] + "."


_KIND_FIX = {
    "all_to_all": "pipeline the input distribution (TorchRec's TrainPipelineSparseDist) and check the ranks' balance",
    "all_gather": "prefetch the next unit's parameters (FSDP forward_prefetch, backward_prefetch)",
    "reduce_scatter": "prefetch the next unit's parameters (FSDP forward_prefetch, backward_prefetch)",
    "broadcast": "broadcast_buffers=False if it is DDP's buffers, else async_op=True",
}


def fix(r: ExposedCommunication) -> str:
    if r.kind in _KIND_FIX:
        if r.late_peer is not None:
            return (f"{r.collective} exposes {t(r.own_exposed_us)} per step of its own besides waiting for rank "
                    f"{r.late_peer.rank}: fix rank {r.late_peer.rank} first, then {_KIND_FIX[r.kind]}")
        return (f"{r.collective} ({KINDS[r.kind]}) runs {t(r.exposed_us)} of every {t(r.step_us)} step with no "
                f"compute beside it: {_KIND_FIX[r.kind]}")
    if r.late_peer is not None:
        return (f"{r.collective} exposes {t(r.own_exposed_us)} per step of its own besides waiting for rank "
                f"{r.late_peer.rank}: fix rank {r.late_peer.rank} first, then accumulate gradients under no_sync() "
                "to all-reduce once every N steps")
    return (f"{r.collective} runs {t(r.exposed_us)} of every {t(r.step_us)} step with no compute beside it: "
            "accumulate gradients under no_sync() to all-reduce once every N steps, and tune DDP's bucket_cap_mb "
            "so buckets start during backward")


def basis(r: ExposedCommunication) -> str:
    last = "the last bucket's all-reduce" if r.kind in ("all_reduce", "") else f"the last {KINDS[r.kind]}"
    text = f"communication with no compute beside it, summed per step (upper bound: {last} cannot hide)"
    if r.late_peer is not None:
        text += f", less the wait for rank {r.late_peer.rank}, which counts in straggler"
    return text


NOTES = {
    ExposedCall: lambda n: f"{t(n.exposed_us)} of its {t(n.dur_us)} with no compute beside it",
}
