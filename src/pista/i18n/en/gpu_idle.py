"""gpu-idle in English."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.rules.gpu_idle import GpuIdle, IdleGap, Region, SelfTime, UnderRegion

TITLE = "The GPU idles under a region that launches almost nothing"


def _step(r: GpuIdle) -> str:
    return "step" if r.has_steps else "window"


def _of(r: GpuIdle) -> str:
    return f"the {t(r.step_us)} median step" if r.has_steps else f"the {t(r.step_us)} window"


def _launches(g: Region) -> str:
    if g.launches_per_call < 0.5:
        return "launches nothing"
    return f"launches {g.launches_per_call:.0f} kernel(s) or copies"


def _optimizer(g: Region) -> str:
    return g.optimizer or "the optimizer"


_MODES = {"fused": "fused", "foreach": "foreach", "per-parameter": "per parameter"}


def _reading(g: Region) -> str:
    """What the region's idle is, where it is not input."""
    if g.kind == "optimizer":
        mode = f", {_MODES[g.mode]}" if g.mode else ""
        return f"the optimizer's step: {_optimizer(g)}{mode}"
    if g.kind == "start-up":
        return "start-up"
    if g.kind == "host":
        return "the model's own ops on the host"
    if g.kind == "collective":
        return f"waiting on a collective: {g.collective}"
    return ""


def _region(g: Region, r: GpuIdle) -> str:
    calls = f"{g.calls} calls of {t(g.host_us_per_call)}" if g.calls > 1 else f"one call of {t(g.host_us_per_call)}"
    reading = f"{_reading(g)}; " if _reading(g) else ""
    return f"'{g.name}' ({reading}{calls}, each {_launches(g)}): {t(g.idle_us_per_step)} per {_step(r)}"


def message(r: GpuIdle) -> str:
    share = r.idle_us_per_step / r.step_us if r.step_us else 0.0
    text = (f"The GPU is idle {t(r.idle_us_per_step)} per {_step(r)} ({pct(min(share, 1.0))} of {_of(r)}); "
            f"{t(r.claimed_us_per_step)} per {_step(r)} of it is under regions that launch almost nothing"
            + (": " if all(g.kind == "collective" for g in r.regions) else
               ", so the host is doing something other than feeding the GPU: ")
            + "; ".join(_region(g, r) for g in r.regions)
            + f". The longest stretch lasts {t(r.longest_gap_us)}")
    if r.ops_self_us:
        text += "; per step, most host self time in this idle: " + ", ".join(f"{n} {t(v)}" for n, v in r.ops_self_us)
    if r.names_no_op:
        text += (f"; {t(r.no_op_us_per_step)} per {_step(r)} in no recorded op at all (Python, file or network "
                 "I/O, sleeping: with_stack=True names the code)")
    return text + "."


# torch's name for a DataLoader that already has worker processes
WORKERS = "_MultiProcessingDataLoaderIter"


def _optimizer_remedy(g: Region) -> str:
    """unfused-optimizer's remedies for the mode the region's ops show, or none where it has no faster mode."""
    name = _optimizer(g)
    if g.mode == "fused" or (g.mode == "foreach" and not g.fusable):
        return (f"{name} already runs {g.mode}, so there is no faster mode to switch to: what holds the GPU is the "
                "host code around its kernels (gradient clipping, schedulers, per-parameter bookkeeping); record with "
                "with_stack=True to see it")
    if g.fusable:
        return (f"torch.optim.{g.optimizer}(..., fused=True) runs the update as one kernel with a couple of host ops "
                "instead of an op and a launch per parameter and pass")
    if g.mode == "per-parameter":
        return ("pass foreach=True if it takes it, or compile its step (torch.compile(opt.step)), so the update is a "
                "few kernels over all parameters instead of an op per parameter")
    return (f"its ops are not in the trace; if {name} updates the parameters one by one, compile its step "
            "(torch.compile(opt.step)) or give it a foreach implementation; with_stack=True names its code")


def advice(r: GpuIdle) -> str:
    g = r.regions[0]
    if g.kind == "optimizer":
        return (f"'{g.name}' is the optimizer's step ({_optimizer(g)}), not input: its host time is the GPU's idle. "
                f"{_optimizer_remedy(g)[0].upper()}{_optimizer_remedy(g)[1:]}.")
    if g.kind == "start-up":
        return (f"'{g.name}' is start-up, not input: it runs once, before the GPU's first work or in the calls that "
                "start CUDA up (the context, cuBLAS/cuDNN handles, building the model and its data), not in the steady "
                "state. Run one iteration before profiling, or profile with torch.profiler.schedule(wait=1, warmup=1, "
                "active=N), to read the steps.")
    if g.kind == "collective":
        return (f"'{g.name}' waits on a collective, not on input: the GPU's next work there is what {g.collective} "
                "launched, queued before the idle began and run only as it ends, so the GPU waits for the other ranks "
                "(or a stream the collective depends on) and the host for its result. Overlap the collective with "
                "compute: launch it earlier or asynchronously and wait only where its result is needed (TorchRec's "
                "TrainPipelineSparseDist runs the next batch's input all-to-all during this batch), and compare the "
                "ranks' traces at this point: the last rank to arrive sets the wait.")
    if g.kind == "host":
        return (f"'{g.name}' runs the model's own ops on the host (compute ops or autograd nodes) and launches "
                "almost nothing while the GPU waits: check where they run (tensors left on the CPU, a thread the "
                "step waits for); record with_stack=True to see its code, then move that work to the GPU or off the "
                "step.")
    if WORKERS in g.name:
        return (f"'{r.regions[0].name}' already loads in worker processes, and the GPU still waits for it: the "
                "workers are slower than the step. Give them more (num_workers up to the free cores, prefetch_factor, "
                "persistent_workers=True), keep the step's threads off their cores, and make each sample cheaper "
                "(decode on the GPU, cache decoded data, batched transforms).")
    return (f"'{r.regions[0].name}' is input work on the GPU's critical path: load in DataLoader workers "
            "(num_workers>0, pin_memory=True, prefetching) so the next batch is ready while the GPU runs this one, "
            "copy with non_blocking=True, or build the data on the GPU; move checkpointing and logging out of the "
            "step or to a thread.")


def fix(r: GpuIdle) -> str:
    g = r.regions[0]
    if g.kind == "optimizer":
        return f"{g.name} takes {t(g.host_us_per_call)} of {_of(r)} with the GPU idle: it is the optimizer's step: " + (
            f"torch.optim.{g.optimizer}(..., fused=True)" if g.fusable and g.mode != "fused" else _optimizer_remedy(g))
    if g.kind == "start-up":
        return (f"{g.name} takes {t(g.host_us_per_call)} of {_of(r)} once, before the GPU's work: start-up, profile "
                "after a warm-up")
    if g.kind == "collective":
        return (f"{g.name} waits {t(g.host_us_per_call)} a call on {g.collective} with the GPU idle: overlap the "
                "collective with compute and compare the ranks")
    if g.kind == "host":
        return (f"{g.name} takes {t(g.host_us_per_call)} of {_of(r)} running the model's ops on the host: record "
                "with_stack=True and move that work to the GPU")
    if WORKERS in g.name:
        return f"{g.name} takes {t(g.host_us_per_call)} of {_of(r)} though it has workers: more workers, cheaper samples"
    return (f"{g.name} takes {t(g.host_us_per_call)} of {_of(r)} and {_launches(g)}: load in DataLoader workers "
            "(num_workers>0, pin_memory=True)")


def basis(r: GpuIdle) -> str:
    return ("GPU idle inside the steps under regions that launch almost nothing, per step, without the idle after "
            "syncs (other findings'); upper bound")


NOTES = {
    IdleGap: lambda n: f"GPU idle for {t(n.idle_us)} under a region that launches almost nothing",
    UnderRegion: lambda n: f"{t(n.idle_us)} of GPU idle under this call, {n.launches} launch(es) in it",
    SelfTime: lambda n: f"{t(n.self_us)} per step of this op's host self time inside the idle",
}
