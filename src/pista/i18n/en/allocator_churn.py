"""allocator-churn in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.allocator_churn import AllocatorChurn, AllocCall, AllocNote

TITLE = "Memory is allocated and freed with CUDA runtime calls every step"


def _per(r: AllocatorChurn) -> str:
    return "per step" if r.has_steps else "in the window"


def _call(a: AllocCall, r: AllocatorChurn) -> str:
    under = ", ".join(a.under[:3]) or "no op"
    return f"{a.name} {a.per_step:.{1 if r.has_steps else 0}f}x {_per(r)} under {under}, {t(a.host_us)} {_per(r)}"


def _whole(r: AllocatorChurn) -> str:
    return "the step" if r.has_steps else "the window"


def message(r: AllocatorChurn) -> str:
    where = (f"the caching allocator misses in {r.steps_with_calls} of {r.steps} steps" if r.has_steps
             else "the caching allocator misses all through the window (it has no steps)")
    text = (f"{'; '.join(_call(a, r) for a in r.calls)}: {where}. The calls take {t(r.host_us)} of host time "
            f"{_per(r)} and leave the GPU idle {t(r.idle_us)} {_per(r)}, {r.step_share_percent:.1f}% of {_whole(r)}.")
    if r.frees_in_ops:
        text += (" Most of the frees' time is inside ops: memory is given back while the ops run, so the allocator "
                 "frees its cache to retry allocations that failed (memory at its limit), or caching is off.")
    return text


def advice(r: AllocatorChurn) -> str:
    text = ""
    if r.grad_mode:
        text = ("Inference runs in grad mode (inference-grad-mode): each step's outputs, and a KV cache, keep its "
                "autograd graph and saved tensors alive, so memory grows and the allocator asks CUDA for more; "
                "torch.inference_mode() removes the cause. ")
    if r.frees_in_ops:
        text = ("The frees run inside ops, not after an empty_cache(): check torch.cuda.memory_stats()"
                "['num_alloc_retries'] (the allocator freeing its cache to retry: lower the peak memory with a smaller "
                "batch or activation checkpointing) and that PYTORCH_NO_CUDA_MEMORY_CACHING is not set (caching off: "
                "every tensor is a malloc and a free). ")
    elif r.frees_outside_ops:
        text = ("cudaFree runs outside any op, which is torch.cuda.empty_cache() (or a cache flush) inside the loop: "
                "remove it, or call it between phases only, so the next step reuses the cached blocks. ")
    return text + ("Keep tensor shapes static (or bucket them) so cached blocks fit again, try "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation, and watch "
                   "torch.cuda.memory_stats()['num_device_alloc'] and ['num_alloc_retries'] across steps.")


def fix(r: AllocatorChurn) -> str:
    names = "/".join(a.name for a in r.calls)
    change = ("run the inference under torch.inference_mode() (grad mode keeps each step's graph alive)"
              if r.grad_mode else
              "the frees run inside ops: check num_alloc_retries (memory at its limit) and that caching is on"
              if r.frees_in_ops else "remove torch.cuda.empty_cache() from the loop" if r.frees_outside_ops
              else "keep shapes static or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so the cache hits")
    return f"{names} run {r.calls_per_step:.0f}x {_per(r)}, {t(r.idle_us)} of GPU idle {_per(r)}: {change}"


def basis(r: AllocatorChurn) -> str:
    return ("GPU idle from the start of each allocation or free call until the next device work, per step, the "
            "calls' intervals merged (upper bound: the op after a call keeps its own dispatch time)")


NOTES = {
    AllocNote: lambda n: (f"under {n.under or 'no op'}: host {t(n.host_us)}, GPU busy {t(n.gpu_busy_us)} of it"),
}
