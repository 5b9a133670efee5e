"""What each piece of device work is for: GEMM, convolution, attention, the optimizer, dtype casts,
elementwise, reductions, copies, memsets, communication, torch.compile's own work, other.

The launching op's ancestry decides first (a kernel under `Optimizer.step#AdamW.step` is the
optimizer's whatever it computes; a copy kernel under `aten::_to_copy` on the device is a dtype cast,
as autocast's and `.to(dtype)`'s are; a GEMM under `aten::scaled_dot_product_attention` is
attention), then the kind of kernel its name says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pista.query import COMPILE_EVENT, nearest_in, pattern_mask, update_starts
from pista.trace.facts import Facts, per_facts

PURPOSES = ("gemm", "conv", "attention", "optimizer", "cast", "elementwise", "reduction", "copy", "memset",
            "communication", "compile", "other")
CODE = {p: i for i, p in enumerate(PURPOSES)}

# Host events whose work is one purpose, whatever kernels they launch; earlier entries win. Op names
# as torch 2.x records them (the fixtures: series_mlp_eager's Optimizer.step#AdamW.step, gpt_autocast's
# aten::_to_copy under autocast, gpt_bf16_fused's aten::_scaled_dot_product_flash_attention).
ANCESTRY = (
    # torch.compile's own GPU work (autotuning benchmarks and their buffer fills): not the program's
    # (gpu/recompile: 6.1 ms per step of aten::zero_ under CachingAutotuner.benchmark_all_configs)
    ("compile", COMPILE_EVENT),
    # a collective launched inside the optimizer's step (Shampoo's all-gather in HTA's hta_sampled_rank0: 53 of
    # the 56 ms a step under Optimizer.step) is communication, not the update
    ("communication", re.compile(r"^(nccl|c10d|gloo|record_param_comms)", re.I)),
    ("optimizer", re.compile(r"^Optimizer\.(step|zero_grad)#|^aten::_fused_(adam|adamw|sgd)")),
    ("attention", re.compile(r"^aten::(_?scaled_dot_product|_flash_attention|_efficient_attention|_cudnn_attention)"
                             r"|^aten::_scaled_dot_product")),
    ("cast", re.compile(r"^aten::_to_copy$")),
    ("conv", re.compile(r"^aten::(cudnn_convolution|convolution|_convolution|convolution_backward|conv\d?d"
                        r"|miopen_convolution)")),
    ("gemm", re.compile(r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_mm|addmv|mv|_addmm_activation)$")),
)
# Then the kernel's own name.
KERNEL_KIND = (
    ("optimizer", re.compile(r"FusedOptimizer|fused_adam|FusedSgd|fused_sgd", re.I)),
    # Inductor's kernel for a lone dtype conversion (series_mlp_compile: the fp32 weights cast to bf16
    # in the forward, the bf16 gradients back to fp32, 11.6% of its GPU time)
    ("cast", re.compile(r"^triton_poi_fused__to_copy_\d+$")),
    # DeepEP's all-to-all kernels for expert parallelism (deep_ep:: upstream, dpsk::ep:: in DeepSeek's own traces:
    # review 5's deepseek_h800_dualpipe_train, internode dispatch/combine/notify 56% of the GPU time, read as other)
    # and NVSHMEM's
    ("communication", re.compile(r"nccl|rccl|\b(deep_ep|dpsk::ep)::|nvshmem", re.I)),
    # ROCm: CK's fmha_fwd/fmha_bwd, Triton's attn_fwd/attn_bwd, aiter's attention kernels (MI300X/MI350 traces)
    ("attention", re.compile(r"flash|fmha|attention|attn_(fwd|bwd)|paged_attn|mha_(fwd|bwd)", re.I)),
    ("conv", re.compile(r"conv|cudnn.*(fprop|dgrad|wgrad)|implicit_gemm", re.I)),
    # ROCm: hipBLASLt/Tensile's Cijk_* kernels, rocBLAS, CK's device_gemm (issue 35: GEMMs read as "other"
    # on an MI350, 2% gemm where they are about 55-60%)
    # Triton's matmuls (matmul_kernel, triton_kernels' _matmul_ogs for MoE experts: 80% of a vLLM gpt-oss window
    # in TraceLens' tl_vllm_piecewise_graph, read as "other")
    # a user's own Triton matmul by any name holding "matmul" (kf_log_bfeed's matmul_k: 91% of the GPU time read
    # as other), Inductor's GEMM templates (triton_tem_fused_mm/addmm/bmm)
    ("gemm", re.compile(r"gemm|nvjet|cutlass|xmma|cublas|^Kernel2$|wgmma|_mma_|^Cijk_|rocblas|hipblaslt|(?<!finalize_)matmul(?!_scatter)"
                       r"|^triton_tem_fused_(mm|addmm|bmm|baddbmm)", re.I)),
    ("reduction", re.compile(r"reduce|norm|bn_fw|bn_bw|softmax|triton_(red|per)_|cross_entropy|nll_loss|argmax|topk|sort|pool"
                             r"|GammaBeta|grad_weight", re.I)),
    ("elementwise", re.compile(r"elementwise|triton_poi_|copy_kernel|fill_kernel|index|gather|scatter|cat_|CatArray"
                               r"|multi_tensor_apply|foreach|where|clamp|dropout", re.I)),
)


@dataclass(frozen=True)
class PurposeTime:
    purpose: str
    us_per_step: float
    share: float  # of the device work time


@per_facts
def classify(facts: Facts) -> np.ndarray:
    """Per event: the code of its purpose (index into PURPOSES) for device work, -1 for the rest."""
    trace = facts.trace
    out = np.full(len(trace), -1, dtype=np.int8)
    work = facts.is_device_work
    out[work & trace.category_mask({"gpu_memcpy"})] = CODE["copy"]
    out[work & trace.category_mask({"gpu_memset"})] = CODE["memset"]
    kernels = np.flatnonzero(work & trace.category_mask({"kernel"}))
    if kernels.size == 0:
        out.setflags(write=False)
        return out
    # the host event that launched each kernel: its op (external id), else its runtime call
    source = np.where(facts.owner[kernels] >= 0, facts.owner[kernels], facts.launcher[kernels])
    todo = source >= 0
    code = np.full(kernels.size, -1, dtype=np.int8)
    host = facts.is_host | facts.is_overhead
    for purpose, pattern in ANCESTRY:
        hit = todo & (code < 0)
        # climbing from the kernels' ops only, not an answer for every event of the trace
        found = nearest_in(facts, host & pattern_mask(facts, pattern), source[hit])
        if purpose == "optimizer":
            found = _past_closure(facts, found, source[hit])
        hit[hit] = found >= 0
        code[hit] = CODE[purpose]
    kernel_names = trace.name[kernels]
    for purpose, pattern in KERNEL_KIND:
        ids = np.asarray([i for i, n in enumerate(trace.names) if pattern.search(n)], dtype=trace.name.dtype)
        hit = (code < 0) & np.isin(kernel_names, ids)
        code[hit] = CODE[purpose]
    code[code < 0] = CODE["other"]
    out[kernels] = code
    out.setflags(write=False)  # shared by every reader of this trace
    return out


def _past_closure(facts: Facts, calls: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """The optimizer calls found for `ops`, -1 where the op runs before the last autograd node inside its
    call ends: a closure's forward and backward (Lightning's `optimizer.step(closure)`,
    savings/closure_unfused: its forward GEMMs had read as the optimizer's)."""
    inside = calls >= 0
    if not inside.any():
        return calls
    own_start = update_starts(facts, calls[inside])
    out = calls.copy()
    out[np.flatnonzero(inside)[facts.trace.ts[ops[inside]] < own_start]] = -1
    return out


def time_by_purpose(facts: Facts) -> list[PurposeTime]:
    """Device work time per step by purpose, inside the window, largest first (zero purposes left out)."""
    if not facts.has_gpu:
        return []
    codes = classify(facts)
    lo, hi = facts.window
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work & (trace.ts >= lo) & (trace.ts < hi))
    totals = np.bincount(codes[work].astype(np.int64), weights=trace.dur[work].astype(np.float64),
                         minlength=len(PURPOSES))
    steps = len(facts.steps) or 1
    whole = float(totals.sum()) or 1.0
    out = [PurposeTime(p, float(totals[i]) / steps / 1000.0, float(totals[i]) / whole)
           for i, p in enumerate(PURPOSES) if totals[i] > 0]
    return sorted(out, key=lambda p: -p.us_per_step)
