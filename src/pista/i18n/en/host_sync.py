"""host-sync in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.policy import WARNING_SHARE
from pista.rules.host_sync import Blocked, HostSync, SyncedVia, SyncingOp

TITLE = "Ops inside the step synchronize the host with the GPU"


def _per_step(op: SyncingOp) -> str:
    return ", ".join(f"step {s}: {c}" if s != "None" else f"no step: {c}" for s, c in op.per_step.items())


def message(r: HostSync) -> str:
    ops = "; ".join(f"{o.name} {o.count}x ({_per_step(o)}; {' > '.join(o.chain)}): host blocked {t(o.blocked_us)}, "
                    f"{t(o.stall_us)} of GPU idle it caused" for o in r.ops)
    text = (f"{r.syncs} syncing op calls in {r.steps} step(s): {ops}. Together they left the GPU "
            f"idle {t(r.stall_us / max(r.steps, 1))} per step.")
    if r.step_share_percent < 100 * WARNING_SHARE:
        text += (" Cheap while the host is the bottleneck; once the host runs ahead, each sync drains the GPU's "
                 "queue and costs a step's worth of launch latency, and a step that syncs cannot be captured as a "
                 "CUDA graph.")
    return text


def advice(r: HostSync) -> str:
    if r.ops[0].explicit:
        return (f"Take {r.ops[0].name} out of the step ({' > '.join(r.ops[0].chain)}): it drains the GPU's queue "
                "and the GPU then waits for every launch that follows. Time with CUDA events "
                "(torch.cuda.Event(enable_timing=True)) and synchronize only where the host needs a result.")
    return ("Keep results on the GPU and read them rarely (accumulate, then .item() every N steps); copy with "
            "non_blocking=True into pinned memory; find hidden syncs with torch.cuda.set_sync_debug_mode('warn').")


def fix(r: HostSync) -> str:
    o = r.ops[0]
    per_step = o.count / max(r.steps, 1)
    if o.explicit:
        return (f"{' > '.join(o.chain)} drains the GPU's queue {per_step:.0f}x per step, {t(o.stall_us / r.steps)} of "
                "GPU idle per step: drop the synchronize from the step (time with CUDA events).")
    return (f"{o.name} syncs the host {per_step:.0f}x per step ({' > '.join(o.chain)}), {t(o.stall_us / r.steps)} "
            "per step with the GPU waiting: keep the value on the GPU and read it once every N steps.")


def basis(r: HostSync) -> str:
    return ("per sync, the GPU idle after it until the next device work, at most the GPU work it waited for "
            "(what the host could have dispatched meanwhile), per step")


NOTES = {
    SyncedVia: lambda n: (f"synced via {n.via}; host blocked {t(n.blocked_us)}, {t(n.stall_us)} with the GPU "
                          "idle after"),
    Blocked: lambda n: f"host blocked {t(n.blocked_us)}, GPU busy {t(n.gpu_busy_us)}",
}
