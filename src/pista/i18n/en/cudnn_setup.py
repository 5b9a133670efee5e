"""cudnn-setup in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.cudnn_setup import CallNote, CudnnSetup

TITLE = "cuDNN sets up each new shape on the host while the GPU waits"

_WHAT = {
    "attention": "cuDNN's attention builds and compiles a graph for each new sequence length (a KV cache that "
                 "grows by a token per step gives it a new one every step)",
    "conv": "cuDNN builds an execution plan for each new convolution shape",
    "rnn": "cuDNN sets up its RNN for each new shape",
}


def _steps(r: CudnnSetup) -> str:
    if not r.in_steps:
        return "the window"
    return f"step {r.in_steps[0]}" if len(r.in_steps) == 1 else "steps " + ", ".join(map(str, r.in_steps))


def _per(r: CudnnSetup) -> str:
    return "per step" if r.steps else "in the window"


def message(r: CudnnSetup) -> str:
    usual = f", against {t(r.typical_us)} in their other calls" if r.typical_us is not None else ""
    total = (f"{t(r.idle_us)} once: the window's first pass, every shape runs again later without set-up" if r.once
             else f"{t(r.idle_us / max(r.steps, 1))} {_per(r)}")
    text = (f"{r.calls} calls of {', '.join(r.ops)} in {_steps(r)} hold the GPU idle {t(r.per_call_us)} each "
            f"(median){usual}: {total}.")
    if r.new_shapes is not None:
        text += f" {r.new_shapes} of them had an input shape not seen earlier in the trace."
    if r.benchmark:
        text += (f" They launch {r.launches_per_call:.0f} kernels each and synchronize {r.syncs} times: "
                 "cudnn.benchmark is timing every algorithm for each new shape.")
    else:
        text += f" {_WHAT[r.kind]}."
    return text


def advice(r: CudnnSetup) -> str:
    if r.once:
        return ("The shapes repeat: cuDNN set each up once, in the first pass (a cold forward), not in the steady "
                "state. Run one iteration before profiling, or profile with torch.profiler.schedule(wait=1, warmup=1, "
                "active=N)" + ("; cudnn.benchmark's search pays off on shapes that repeat, keep it." if r.benchmark
                               else "."))
    if r.benchmark:
        return ("Set torch.backends.cudnn.benchmark = False while input shapes keep changing (it pays only for "
                "shapes that repeat), or keep them fixed: bucket the sizes to a few and warm each one up before "
                "profiling.")
    if r.kind == "attention":
        return ("Pin scaled_dot_product_attention to the flash or memory-efficient kernels, which need no per-shape "
                "graph: with torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, "
                "SDPBackend.EFFICIENT_ATTENTION]): around the model call; or keep the length fixed (a static KV "
                "cache, transformers' cache_implementation='static', or padding to a few lengths).")
    return ("Keep the input shapes to a few sizes (bucket or pad them) and warm each one up before profiling: every "
            "new shape costs a new cuDNN plan, on the host, with the GPU idle.")


def fix(r: CudnnSetup) -> str:
    op = r.slowest[0].op if r.slowest else r.ops[0]
    per_step = t(r.idle_us / max(r.steps, 1))
    if r.once:
        return (f"{op} sets up each shape once in the window's first pass ({t(r.idle_us)} once); the shapes repeat "
                "after it: run one iteration before profiling.")
    if r.benchmark:
        return (f"{op} runs cudnn.benchmark's algorithm search for every new input shape, {per_step} {_per(r)}: set "
                "torch.backends.cudnn.benchmark = False or keep the shapes fixed.")
    if r.kind == "attention":
        return (f"{op} builds a cuDNN graph for every new sequence length, {per_step} {_per(r)}: pin SDPA to flash/"
                "efficient (torch.nn.attention.sdpa_kernel) or use a static KV cache.")
    return f"{op} builds a cuDNN plan for every new shape, {per_step} {_per(r)}: bucket the input sizes to a few."


def basis(r: CudnnSetup) -> str:
    usual = (", less the same ops' idle in their other calls" if r.typical_us is not None
             else ", an upper bound (no other call of these ops to compare with)")
    per = "once, a first pass" if r.once else "per step" if r.steps else "over the window"
    return f"the GPU idle inside the cuDNN calls that set up a shape ({t(r.idle_us)}){usual}, {per}"


NOTES = {
    CallNote: lambda n: (f"{t(n.idle_us)} of GPU idle in this call, {n.launches} kernel(s) launched"
                         + (f"; input {n.dims}" if n.dims else "")),
}
