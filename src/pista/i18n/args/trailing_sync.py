"""trailing-sync: the arguments of its text (ftl/<lang>/trailing_sync.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, how_many, yes
from pista.i18n._fmt import t, t_or_blank
from pista.rules.trailing_sync import IdleSync, TrailingSync

# The Python call behind each runtime call (code, the same in every language).
CALLS = {
    "cudaDeviceSynchronize": "torch.cuda.synchronize()",
    "cuCtxSynchronize": "torch.cuda.synchronize()",
    "cudaStreamSynchronize": "stream.synchronize()",
    "cuStreamSynchronize": "stream.synchronize()",
    "cudaEventSynchronize": "event.synchronize()",
    "cuEventSynchronize": "event.synchronize()",
}


def args(r: TrailingSync, say: Say) -> dict[str, str]:
    return {
        "syncs": str(r.syncs), "name": r.name, "call": CALLS.get(r.name, r.name),
        "region": r.region or "", "in_region": yes(r.region),
        "steps_hit": how_many(len(r.steps_hit)), "step_list": ", ".join(map(str, r.steps_hit)),
        "longest_us": t(r.longest_us), "outstanding_us": t(r.outstanding_us),
        "outstanding": yes(r.outstanding_us),
        "idle_before": yes(r.gpu_idle_before_us is not None),
        "idle_before_us": t_or_blank(r.gpu_idle_before_us),
        "sync_us": t(r.sync_us), "per_step_us": t(r.saved_us / r.steps), "share": f"{r.step_share_percent:.1f}",
    }


NOTES = {
    IdleSync: lambda n, say: {"outstanding_us": t(n.outstanding_us), "saved_us": t(n.saved_us),
                              "region": n.region or "", "in_region": yes(n.region)},
}
