"""recompilation in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.recompilation import NEAR_LIMIT, STEADY, WARMUP, CompileSpan, Recompilation, RegionCall

TITLE = "torch.compile compiles inside the profiled window, or nears its recompile limit"


def _steps(steps: tuple[int, ...]) -> str:
    if not steps:
        return "the window"
    return f"step {steps[0]}" if len(steps) == 1 else "steps " + ", ".join(map(str, steps))


def _what(r: Recompilation) -> str:
    return f"{r.compiles} compile(s)" + (f" and {r.autotunes} autotuning run(s)" if r.autotunes else "")


def _ids(r: Recompilation) -> str:
    return "; ".join(f"frame {f.frame}: {', '.join(f.ids)}" for f in r.frames)


def _frames(r: Recompilation) -> str:
    return ", ".join(f"frame {f.frame} ({', '.join(f.ids)})" for f in r.frames) or "torch.compile"


def _limit(r: Recompilation) -> str:
    near = [f for f in r.frames if f.frame in r.near_limit]
    held = ", ".join(f"frame {f.frame} holds {f.entries}" for f in near)
    text = (f" Near the recompile limit: {held} of the {r.recompile_limit} compiled entries "
            "torch._dynamo.config.recompile_limit allows (cache_size_limit before torch 2.7); past it Dynamo stops "
            "compiling the frame and runs it eagerly.")
    if r.kind == STEADY:
        f = max(near, key=lambda f: f.entries)
        rate = f.compiles / max(r.steps, 1)
        if rate > 0:
            text += (f" At {rate:.1f} recompile(s) per step, frame {f.frame} reaches it in about "
                     f"{max(0.0, (r.recompile_limit - f.entries) / rate):.0f} more step(s).")
    return text


def message(r: Recompilation) -> str:
    cost = (f"{_what(r)} in {_steps(r.steps_compiling)}: {t(r.compile_us)} of host time, {t(r.exposed_us)} of it "
            f"with the GPU idle, {r.step_share_percent:.1f}% of the {'step time' if r.kind == STEADY else 'window'}")
    if r.kind == STEADY:
        text = (f"torch.compile recompiles in the steady state, {cost}: a guard keeps failing, so this cost comes "
                "back every time.")
    elif r.kind == WARMUP:
        text = (f"torch.compile's first compile runs inside the window, {cost}: a one-time warm-up, not a "
                "steady-state cost.")
    elif r.kind == NEAR_LIMIT:
        text = "Nothing compiles inside the window, but its compiled regions show how often their frames recompiled."
    else:
        text = (f"torch.compile recompiled once inside the window, {cost}: one-time here, but it comes back "
                "whenever the same guard fails again.")
    if r.frames:
        text += f" Compile ids seen: {_ids(r)}."
    if r.graphs > 1:
        text += f" {r.graphs} different compiled graphs called (## Call CompiledFxGraph hashes)."
    if r.shapes:
        text += " Input shapes per call: " + " -> ".join(r.shapes) + "."
    if r.near_limit:
        text += _limit(r)
    return text


def _guard_fix(r: Recompilation) -> str:
    if r.shapes:
        return ("mark the dimensions that vary dynamic (torch._dynamo.mark_dynamic(x, dim) or "
                "torch.compile(dynamic=True)) or pad/bucket the inputs to a few shapes")
    return ("keep what the failing guard checks fixed (pass changing Python scalars as tensors, reuse one module "
            "instance, keep dtypes and devices)")


def advice(r: Recompilation) -> str:
    if r.kind == WARMUP:
        return ("Warm up before profiling or timing: run the compiled step a few times first, or profile with "
                "torch.profiler.schedule(wait=1, warmup=1, active=N); nothing to change in the model.")
    if r.kind == STEADY:
        text = ("The input shapes change between calls: " if r.shapes else "A guard fails call after call: ")
        text += f"{_guard_fix(r)}. TORCH_LOGS='recompiles' names the guard that failed."
    elif r.kind == NEAR_LIMIT:
        text = f"Find what recompiles with TORCH_LOGS='recompiles' and {_guard_fix(r)}."
    else:
        text = (f"Warm up every input shape before profiling; if this one recurs in training, {_guard_fix(r)}. "
                "TORCH_LOGS='recompiles' names the guard that failed.")
    if r.near_limit:
        text += " Raising recompile_limit only postpones the fallback to eager: fix the guard."
    return text


def fix(r: Recompilation) -> str:
    if r.kind == STEADY:
        why = "new input shapes" if r.shapes else "a guard fails"
        return (f"{_frames(r)} recompiles in {_steps(r.steps_compiling)} ({why}), {t(r.exposed_us / r.steps)} per "
                f"step: {_guard_fix(r)}.")
    if r.kind == WARMUP:
        return (f"{_frames(r)} compiles for the first time inside the window ({t(r.exposed_us)}, one-time): warm up "
                "before profiling.")
    if r.kind == NEAR_LIMIT:
        return f"{_frames(r)} nears the recompile limit ({r.recompile_limit}): {_guard_fix(r)}."
    return (f"{_frames(r)} recompiles once inside the window ({t(r.exposed_us)}, one-time): warm up every shape "
            "before profiling.")


def basis(r: Recompilation) -> str:
    if r.kind == STEADY:
        return "compile time with the GPU idle, per step: it recurs each time a guard fails"
    if r.kind == NEAR_LIMIT:
        return "no compile inside the window; the warning is for the recompile limit"
    return "one-time: the compile time with the GPU idle, in the whole window (warm up before profiling)"


NOTES = {
    CompileSpan: lambda n: (f"{'autotuning' if n.autotune else 'compile'}"
                            + (f" {n.compile_id}" if n.compile_id else "") + f": {t(n.dur_us)}"),
    RegionCall: lambda n: f"compiled region call: frame {n.frame}, compile {n.frame}/{n.count}",
}
