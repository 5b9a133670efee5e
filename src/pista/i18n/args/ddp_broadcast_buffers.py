"""ddp-broadcast-buffers: the arguments of its text (ftl/<lang>/ddp_broadcast_buffers.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say
from pista.i18n._fmt import t
from pista.rules.ddp_broadcast_buffers import DdpBroadcastBuffers, SyncNote


def args(r: DdpBroadcastBuffers, say: Say) -> dict[str, str]:
    return {
        "calls": str(r.calls), "steps": str(r.steps), "broadcasts": f"{r.broadcasts_per_call:.0f}",
        "copies": f"{r.copies_per_call:.0f}", "sync_us": t(r.sync_us), "idle_us": t(r.idle_us),
        "buffers": "sync-batch-norm" if r.sync_batch_norm else "batch-norm" if r.batch_norm else "none",
    }


NOTES = {
    SyncNote: lambda n, say: {"sync_us": t(n.sync_us), "idle_us": t(n.idle_us), "copies": str(n.copies)},
}
