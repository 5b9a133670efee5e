"""ddp-broadcast-buffers in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.ddp_broadcast_buffers import DdpBroadcastBuffers, SyncNote

TITLE = "DDP broadcasts the model's buffers before every forward"


def _buffers(r: DdpBroadcastBuffers) -> str:
    if r.sync_batch_norm:
        return " The model runs SyncBatchNorm: every rank computes the same statistics, so the buffers agree without it."
    if r.batch_norm:
        return (" The model runs BatchNorm, whose running statistics change every forward: without the broadcast each "
                "rank's statistics follow its own data.")
    return (" No op in the steps updates a buffer in the forward (no BatchNorm): the broadcast re-sends the values "
            "every rank already has.")


def message(r: DdpBroadcastBuffers) -> str:
    return (f"Each DistributedDataParallel.forward ({r.calls} in {r.steps} step(s)) first syncs the module's buffers "
            f"from rank 0: {r.broadcasts_per_call:.0f} broadcast(s) of them flattened, then {r.copies_per_call:.0f} "
            f"copies back, {t(r.sync_us)} per step before the module's first op, the GPU idle {t(r.idle_us)} of it. "
            "That is broadcast_buffers=True, the default." + _buffers(r))


def advice(r: DdpBroadcastBuffers) -> str:
    if r.sync_batch_norm or not r.batch_norm:
        return ("Construct DDP with broadcast_buffers=False (DistributedDataParallel(model, ..., broadcast_buffers=False)): "
                "the buffers stay the same on every rank without it.")
    return ("broadcast_buffers=False removes it, and is safe only where the ranks' BatchNorm running statistics may "
            "differ: one rank evaluates and saves the model, or you broadcast the buffers yourself every N steps and "
            "before evaluating or saving. Or convert the BatchNorm layers to SyncBatchNorm "
            "(nn.SyncBatchNorm.convert_sync_batchnorm(model), an all-reduce of the batch statistics per layer) so every "
            "rank computes the same statistics, then turn the broadcast off. Keep the default where every rank "
            "evaluates with its own copy and the copies must match.")


def fix(r: DdpBroadcastBuffers) -> str:
    cond = "" if r.sync_batch_norm or not r.batch_norm else " where the ranks' BatchNorm statistics may differ (or with SyncBatchNorm)"
    return (f"DistributedDataParallel.forward syncs {r.copies_per_call:.0f} buffers, {t(r.idle_us)} per step with the "
            f"GPU idle: broadcast_buffers=False{cond}")


def basis(r: DdpBroadcastBuffers) -> str:
    return "the buffer sync's host time with the GPU idle, from its first op to its last copy, per step"


NOTES = {
    SyncNote: lambda n: f"the buffer sync: {t(n.sync_us)}, the GPU idle {t(n.idle_us)}, {n.copies} copies back",
}
