"""trailing-sync in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.trailing_sync import IdleSync, TrailingSync

TITLE = "Synchronize at the end of a step with nothing left to wait for"

# The Python call behind each runtime call.
CALLS = {
    "cudaDeviceSynchronize": "torch.cuda.synchronize()",
    "cuCtxSynchronize": "torch.cuda.synchronize()",
    "cudaStreamSynchronize": "stream.synchronize()",
    "cuStreamSynchronize": "stream.synchronize()",
    "cudaEventSynchronize": "event.synchronize()",
    "cuEventSynchronize": "event.synchronize()",
}


def _call(r: TrailingSync) -> str:
    return CALLS.get(r.name, r.name)


def _steps(steps: tuple[int, ...]) -> str:
    if not steps:
        return "the window"
    if len(steps) == 1:
        return f"step {steps[0]}"
    return "steps " + ", ".join(map(str, steps))


def message(r: TrailingSync) -> str:
    where = f" in '{r.region}'" if r.region else ""
    idle = f" (the GPU had been idle for {t(r.gpu_idle_before_us)})" if r.gpu_idle_before_us is not None else ""
    return (f"{r.syncs} {r.name} call(s){where} at the end of {_steps(r.steps_hit)} wait for little or no GPU work: "
            f"the longest takes {t(r.longest_us)} with {t(r.outstanding_us)} of GPU work outstanding{idle}. "
            f"Together {t(r.sync_us)}; they cost {t(r.saved_us / r.steps)} per step, {r.step_share_percent:.1f}% "
            "of the step time" + (": the calls themselves, as the GPU had nothing left to do." if not r.outstanding_us
                                  else "."))


def advice(r: TrailingSync) -> str:
    where = f" in '{r.region}'" if r.region else ""
    return (f"Remove the per-step {_call(r)}{where}: it waits for nothing. Synchronize only where the host needs a "
            "result (logging every N steps, the end of an epoch), and time GPU work with CUDA events "
            "(torch.cuda.Event(enable_timing=True)) rather than sync + wall clock.")


def fix(r: TrailingSync) -> str:
    where = f" in '{r.region}'" if r.region else ""
    return (f"{r.name}{where} ends every step with {t(r.outstanding_us)} of GPU work left, costing "
            f"{t(r.saved_us / r.steps)} per step: remove the per-step {_call(r)} and time with CUDA events.")


def basis(r: TrailingSync) -> str:
    return ("the syncs' duration, capped by the GPU idle from each sync's start to the next device work, per step")


NOTES = {
    IdleSync: lambda n: (f"{t(n.outstanding_us)} of GPU work outstanding"
                         + (f" in '{n.region}'" if n.region else "") + f"; costs {t(n.saved_us)}"),
}
