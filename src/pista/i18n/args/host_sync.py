"""host-sync: the arguments of its text (ftl/<lang>/host_sync.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.policy import WARNING_SHARE
from pista.rules.host_sync import Blocked, HostSync, SyncedVia, SyncingOp


def _per_step(o: SyncingOp, say: Say) -> str:
    return ", ".join(say("step-item", step=s, has_step=yes(s != "None"), calls=str(c)) for s, c in o.per_step.items())


def _op(o: SyncingOp, say: Say) -> str:
    return say("op-item", name=o.name, count=str(o.count), per_step=_per_step(o, say), chain=" > ".join(o.chain),
               blocked_us=t(o.blocked_us), stall_us=t(o.stall_us))


def args(r: HostSync, say: Say) -> dict[str, str]:
    top, steps = r.ops[0], max(r.steps, 1)
    return {
        "syncs": str(r.syncs), "steps": str(r.steps), "ops": "; ".join(_op(o, say) for o in r.ops),
        "stall_us": t(r.stall_us / steps), "latent": yes(r.step_share_percent < 100 * WARNING_SHARE),
        "explicit": yes(top.explicit), "op": top.name, "chain": " > ".join(top.chain),
        "per_step": f"{top.count / steps:.0f}", "op_stall_us": t(top.stall_us / steps),
        "checks": yes(r.check), "check": r.check,
    }


NOTES = {
    SyncedVia: lambda n, say: {"via": n.via, "blocked_us": t(n.blocked_us), "stall_us": t(n.stall_us)},
    Blocked: lambda n, say: {"blocked_us": t(n.blocked_us), "busy_us": t(n.gpu_busy_us)},
}
