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
    if r.late_peer is not None:
        text += (f" {t(r.late_peer.wait_us)} of it is this rank waiting for rank {r.late_peer.rank}, which comes "
                 f"late (see straggler); {t(r.own_exposed_us)} is its own.")
    return text


def _own_advice(r: ExposedCommunication) -> str:
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


def fix(r: ExposedCommunication) -> str:
    if r.late_peer is not None:
        return (f"{r.collective} exposes {t(r.own_exposed_us)} per step of its own besides waiting for rank "
                f"{r.late_peer.rank}: fix rank {r.late_peer.rank} first, then accumulate gradients under no_sync() "
                "to all-reduce once every N steps")
    return (f"{r.collective} runs {t(r.exposed_us)} of every {t(r.step_us)} step with no compute beside it: "
            "accumulate gradients under no_sync() to all-reduce once every N steps, and tune DDP's bucket_cap_mb "
            "so buckets start during backward")


def basis(r: ExposedCommunication) -> str:
    text = ("communication with no compute beside it, summed per step (upper bound: the last bucket's "
            "all-reduce cannot hide)")
    if r.late_peer is not None:
        text += f", less the wait for rank {r.late_peer.rank}, which counts in straggler"
    return text


NOTES = {
    ExposedCall: lambda n: f"{t(n.exposed_us)} of its {t(n.dur_us)} with no compute beside it",
}
