"""exposed-communication in English."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.rules.exposed_communication import ExposedCall, ExposedCommunication, SetupCall, WaitingCall


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
    return text + _role_text(r) + _wait_text(r) + _setup_text(r)


def _moved(r: ExposedCommunication) -> str:
    """"fp32, 128.0 MiB a call" as far as the trace says."""
    parts = [r.dtype] if r.dtype else []
    if r.message_bytes:
        parts.append(f"{r.message_bytes / 2**20:.1f} MiB a call")
    return ", ".join(parts)


def _role_text(r: ExposedCommunication) -> str:
    if r.role != "tp":
        return ""
    moved = f" ({_moved(r)})" if _moved(r) else ""
    where = ", in a forward with no backward" if r.forward_only else ""
    return (f" They move tensor or sequence parallelism's activations{moved}: DTensor redistributes "
            f"{r.redistributes:.0f} time(s) a step{where}, and no FSDP marker is in the trace.")


def _wait_text(r: ExposedCommunication) -> str:
    w = r.wait
    if w is None:
        return ""
    what = f"{KINDS[w.kind]} call" if w.kind else "call"
    many = f"{w.calls} {what}s take up to" if w.calls > 1 else f"One {what} takes"
    return (f" {many} {t(w.dur_us)} against a {t(w.median_us)} median of the collective's {w.siblings} calls: "
            f"{t(w.exposed_us)} a step of waiting for another rank to arrive, not transfer time; this rank's trace "
            "cannot say why the other was late.")


def _setup_text(r: ExposedCommunication) -> str:
    if r.setup_us <= 0:
        return ""
    return (f" Left out: {t(r.setup_us)} in the window's first calls of its collectives, up to {r.setup_ratio:.1f}x "
            "their later calls' median: one-time set-up (NCCL connecting to its peers, each rank's first pass).")


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


def _tp_advice(r: ExposedCommunication) -> str:
    moved = f" ({_moved(r)})" if _moved(r) else ""
    bf16 = ("send them in bf16 (run the model in bf16, or cast the activations the parallel styles redistribute: "
            "half the bytes), " if r.dtype in ("fp32", "fp64", "") else "")
    return (f"these collectives ({r.collective}) are tensor or sequence parallelism's activations{moved}, "
            "not FSDP's parameters, and each layer waits for them: "
            f"{bf16}keep to the fewest collectives (sequence parallelism needs one all-gather and one reduce-scatter "
            "per attention and per MLP block; more come from input or output layouts that replicate in between), "
            "overlap them with compute (async tensor parallelism: torch.compile with "
            "torch._inductor.config._micro_pipeline_tp = True), or, if the model fits on one GPU, do not shard it: "
            "run a whole copy on each GPU")


def _unknown_shard_advice(r: ExposedCommunication) -> str:
    return (f"if this {KINDS[r.kind]} ({r.collective}) moves FSDP's or ZeRO's parameters and gradients (the trace "
            "has no FSDP marker to say so), prefetch the next unit's parameters while this one computes (FSDP "
            "forward_prefetch=True and backward_prefetch=BackwardPrefetch.BACKWARD_PRE; FSDP2 "
            "set_modules_to_forward_prefetch and set_modules_to_backward_prefetch) and wrap fewer, larger units; if "
            "it moves tensor parallelism's activations, send them in bf16 and overlap them (async tensor parallelism)")


def _own_advice(r: ExposedCommunication) -> str:
    if r.role == "tp":
        return _tp_advice(r)
    if r.role != "fsdp" and r.kind in ("all_gather", "reduce_scatter"):
        return _unknown_shard_advice(r)
    if _kind_advice(r):
        return _kind_advice(r)
    if r.domain == "gpu":
        return (f"let {r.collective} overlap the backward: tune DDP's bucket_cap_mb so the first buckets start "
                "while backward still runs, keep gradient_as_bucket_view=True, accumulate gradients under no_sync() "
                "to all-reduce once every N micro-batches, or shard with FSDP and prefetch")
    return (f"{r.collective} runs on gloo's CPU threads beside the compute it should hide behind "
            f"({pct(r.overlap_share)} overlapped): accumulate gradients under no_sync() to all-reduce once every "
            "N steps, use bigger buckets (bucket_cap_mb) for fewer, larger messages, or train on GPUs with NCCL")


def _waits_most(r: ExposedCommunication) -> bool:
    """Whether the calls that wait for another rank are most of the exposure (its first fix)."""
    return r.wait is not None and r.late_peer is None and r.wait.exposed_us >= 0.5 * r.exposed_us


def advice(r: ExposedCommunication) -> str:
    own = _own_advice(r)
    if r.late_peer is not None:
        return (f"Rank {r.late_peer.rank} comes late and this rank waits {t(r.late_peer.wait_us)} per step for it: "
                f"fix that rank first (see straggler). For the other {t(r.own_exposed_us)}, {own}.")
    if _waits_most(r):
        return (f"First compare the ranks: {t(r.wait.exposed_us if r.wait else 0.0)} a step is a call waiting for another rank, which "
                "overlap or smaller messages cannot shorten; run pista analyze on the folder of every rank's trace, "
                f"or look at what the other ranks do at that time, and make the late one arrive on time. For the "
                f"rest, {own}.")
    return own[0].upper() + own[1:] + "."


_KIND_FIX = {
    "all_to_all": "pipeline the input distribution (TorchRec's TrainPipelineSparseDist) and check the ranks' balance",
    "all_gather": "prefetch the next unit's parameters (FSDP forward_prefetch, backward_prefetch)",
    "reduce_scatter": "prefetch the next unit's parameters (FSDP forward_prefetch, backward_prefetch)",
    "broadcast": "broadcast_buffers=False if it is DDP's buffers, else async_op=True",
}


_TP_FIX = "tensor-parallel activations: send them in bf16, keep to the fewest collectives, overlap them (async TP), " \
    "or do not shard a model that fits one GPU"
_ALL_REDUCE_FIX = ("accumulate gradients under no_sync() to all-reduce once every N steps, and tune DDP's bucket_cap_mb "
                   "so buckets start during backward")
_SHARD_FIX = ("if FSDP's, prefetch the next unit's parameters (FSDP forward_prefetch, backward_prefetch); if tensor "
              "parallelism's activations, send them in bf16 and overlap them (async TP)")


def _fix_of(r: ExposedCommunication) -> str:
    """The short fix for this collective, read from whose it is."""
    if r.role == "tp":
        return _TP_FIX
    if r.role != "fsdp" and r.kind in ("all_gather", "reduce_scatter"):
        return _SHARD_FIX
    return _KIND_FIX.get(r.kind, _ALL_REDUCE_FIX)


def fix(r: ExposedCommunication) -> str:
    own = _fix_of(r)
    if r.late_peer is not None:
        then = own if r.kind in _KIND_FIX or r.role == "tp" else "accumulate gradients under no_sync() to all-reduce once every N steps"
        return (f"{r.collective} exposes {t(r.own_exposed_us)} per step of its own besides waiting for rank "
                f"{r.late_peer.rank}: fix rank {r.late_peer.rank} first, then {then}")
    kind = f" ({KINDS[r.kind]})" if r.kind in _KIND_FIX or (r.kind and r.role == "tp") else ""
    first = (f"{t(r.wait.exposed_us if r.wait else 0.0)} of it is a call waiting for another rank (compare the ranks first); for the "
             "rest, " if _waits_most(r) else "")
    return f"{r.collective}{kind} runs {t(r.exposed_us)} of every {t(r.step_us)} step with no compute beside it: {first}{own}"


def basis(r: ExposedCommunication) -> str:
    if r.role == "tp":
        text = ("communication with no compute beside it, summed per step (each layer waits for its activations: "
                "only overlapping them, async tensor parallelism, hides it)")
    else:
        last = "the last bucket's all-reduce" if r.kind in ("all_reduce", "") else f"the last {KINDS[r.kind]}"
        text = f"communication with no compute beside it, summed per step (upper bound: {last} cannot hide)"
    if r.setup_us > 0:
        text += f", less {t(r.setup_us)} of one-time set-up in first calls"
    if r.late_peer is not None:
        text += f", less the wait for rank {r.late_peer.rank}, which counts in straggler"
    return text


NOTES = {
    ExposedCall: lambda n: f"{t(n.exposed_us)} of its {t(n.dur_us)} with no compute beside it",
    WaitingCall: lambda n: (f"{n.dur_us / max(n.median_us, 1e-9):.0f}x its collective's {t(n.median_us)} median: "
                            "waiting for another rank"),
    SetupCall: lambda n: (f"the collective's first call, {n.dur_us / max(n.median_us, 1e-9):.1f}x its later "
                          f"calls' {t(n.median_us)} median: one-time set-up"),
}
