"""allocator-churn in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.allocator_churn import AllocatorChurn, AllocCall, AllocNote

TITLE = "Memory is allocated and freed with CUDA runtime calls every step"


def _call(a: AllocCall) -> str:
    under = ", ".join(a.under[:3]) or "no op"
    return f"{a.name} {a.per_step:.1f}x per step under {under}, {t(a.host_us)} per step"


def message(r: AllocatorChurn) -> str:
    return (f"{'; '.join(_call(a) for a in r.calls)}: the caching allocator misses in {r.steps_with_calls} of "
            f"{r.steps} steps. The calls take {t(r.host_us)} of host time per step and leave the GPU idle "
            f"{t(r.idle_us)} per step, {r.step_share_percent:.1f}% of the step.")


def advice(r: AllocatorChurn) -> str:
    text = ""
    if r.grad_mode:
        text = ("Inference runs in grad mode (inference-grad-mode): each step's outputs, and a KV cache, keep its "
                "autograd graph and saved tensors alive, so memory grows and the allocator asks CUDA for more; "
                "torch.inference_mode() removes the cause. ")
    if r.frees_outside_ops:
        text = ("cudaFree runs outside any op, which is torch.cuda.empty_cache() (or a cache flush) inside the loop: "
                "remove it, or call it between phases only, so the next step reuses the cached blocks. ")
    return text + ("Keep tensor shapes static (or bucket them) so cached blocks fit again, try "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation, and watch "
                   "torch.cuda.memory_stats()['num_device_alloc'] and ['num_alloc_retries'] across steps.")


def fix(r: AllocatorChurn) -> str:
    names = "/".join(a.name for a in r.calls)
    change = ("run the inference under torch.inference_mode() (grad mode keeps each step's graph alive)"
              if r.grad_mode else "remove torch.cuda.empty_cache() from the loop" if r.frees_outside_ops
              else "keep shapes static or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so the cache hits")
    return f"{names} run {r.calls_per_step:.0f}x per step, {t(r.idle_us)} of GPU idle per step: {change}"


def basis(r: AllocatorChurn) -> str:
    return ("GPU idle from the start of each allocation or free call until the next device work, per step, the "
            "calls' intervals merged (upper bound: the op after a call keeps its own dispatch time)")


NOTES = {
    AllocNote: lambda n: (f"under {n.under or 'no op'}: host {t(n.host_us)}, GPU busy {t(n.gpu_busy_us)} of it"),
}
