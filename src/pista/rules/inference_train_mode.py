"""What:
Inference with the model left in training mode (`model.train()`, the default after building it, or
after a training loop with no `model.eval()`): in steps that run no backward, dropout still drops
(`aten::dropout` calls `aten::native_dropout`, its kernels run) and batch norm normalises with the
batch's own statistics and updates its running ones (`aten::batch_norm` with training=True, its
statistics kernels run).

Why:
The outputs are wrong, not only slower: dropout makes them random, and batch norm makes each sample's
output depend on the rest of its batch while it overwrites the running mean and variance the model
learnt. `torch.inference_mode()` and `torch.no_grad()` do not change it; only `model.eval()` does. The
training-only kernels cost GPU time besides.

Example:
gpu/resnet50_train (ResNet-50 bf16, batch 32, under torch.inference_mode(), H200): 53 batch norms a
step in training mode, their statistics kernels 1.8 ms of GPU time a step (the eval twin
gpu/resnet50_nograd runs none); unprofiled (gpu/train_time.py) eval() took the step from 6.22 to 4.84
ms. gpu/gpt2_decode_train (GPT-2 decoding): 25 dropouts and 12 attention dropouts a token; eval() took
the token from 7.24 to 6.57 ms with SDPA pinned to flash, but unpinned, dropout_p=0 lets SDPA pick
cuDNN attention, a graph per KV length (gpu/gpt2_decode_nograd, cudnn-setup).

Impact:
The GPU time of the training-only kernels (the active dropouts' kernels, batch norm's statistics and
running-stat updates), times the busy share, plus the per-op GPU idle under the dropouts that drop
(their dispatch, where the host is the limit; overhead-bound, launch-bound and many-calls leave it
to this rule, `claimed_idle`): a lower bound (cuDNN's training batch-norm kernel does both jobs in
one, not counted). gpu/resnet50_train 1.2 ms, gpu/gpt2_decode_train 1.5 ms a step (measured
unprofiled: 1.34 and 0.66 ms). The wrong outputs are why it is at least a warning, whatever it costs,
and comes first (SEVERITY_EXCEPTION); without ProfilerStep markers it is info with that condition
said (a training forward profiled alone, its backward outside the window, looks the same).

Fix:
Call `model.eval()` before the inference loop (and `model.train()` again before training resumes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pista.findings import Context, Finding, Record, Severity, severity_of
from pista.opargs import op_args
from pista.rules import gpu_idle, inference_grad_mode
from pista.rules._common import (
    evidence,
    index_mask,
    inference_steps,
    kernels,
    name_mask,
    nearest_in,
    pattern_mask,
    step_ops,
    us,
)
from pista.trace.facts import Facts, Intervals, per_facts

ID = "inference-train-mode"
# launch-bound and many-calls leave this rule's claimed_idle out before they count (eval() is the fix, not a graph)
CLAIMS_FIRST = True
SEVERITY_EXCEPTION = ("at least a warning: dropout and training-mode batch norm make inference outputs wrong; info "
                      "without ProfilerStep markers, where a training forward profiled alone looks the same")
DROPOUT = frozenset({"aten::dropout", "aten::feature_dropout", "aten::alpha_dropout", "aten::feature_alpha_dropout"})
BATCH_NORM = frozenset({"aten::batch_norm"})
SDPA = frozenset({"aten::scaled_dot_product_attention"})
# scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
SDPA_DROPOUT_ARG = 4
CUDNN_ATTENTION = frozenset({"aten::_scaled_dot_product_cudnn_attention"})
# aten::batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
TRAINING_ARG = 5
# Kernels only training-mode batch norm runs: ATen's statistics pass (gpu/resnet50_train: 53 a step,
# none in gpu/resnet50_nograd) and cuDNN's training forward.
BN_TRAINING_KERNEL = re.compile(r"batch_norm_collect_statistics|bn_fw_tr_")
# Of a training batch norm's kernels, the one eval keeps (gpu/resnet50_nograd runs it alone with an
# elementwise one); the rest is training-only.
BN_KEPT_KERNEL = re.compile(r"batch_norm_transform_input|bn_fw_")
EVIDENCE_OPS = 2


class InferenceTrainMode(Record):
    steps: int  # inference steps
    of_steps: int
    dropouts_per_step: float
    attention_dropouts_per_step: float  # scaled_dot_product_attention calls with dropout_p > 0 (shapes recorded)
    attention_dropout_p: float  # their dropout_p
    attention_not_cudnn: bool  # they run flash or efficient attention: eval() may turn them to cuDNN's
    grad_mode: bool  # inference-grad-mode fires too: the fix is eval() and inference_mode() together
    has_steps: bool  # ProfilerStep markers: without, a training forward profiled alone looks the same
    batch_norms_per_step: float
    counter_updates_per_step: float  # num_batches_tracked += 1 before each training batch norm (shapes recorded)
    kernel_us_per_step: float  # the training-only kernels' GPU time
    busy_share: float
    idle_us_per_step: float  # the per-op GPU idle under the dropping dropouts (their dispatch)


class TrainingOp(Record):
    """Note on an op that ran in training mode."""

    kind: str  # "dropout", "attention" (SDPA with dropout_p > 0) or "batch_norm"


def check(ctx: Context) -> list[Finding]:
    found = _found(ctx.facts)
    if found is None:
        return []
    facts = ctx.facts
    n = found.steps
    kernel_ns = float(facts.trace.dur[found.kernels].sum())
    record = InferenceTrainMode(
        steps=n, of_steps=len(facts.steps) or 1, dropouts_per_step=found.dropouts.size / n,
        attention_dropouts_per_step=found.attention.size / n, attention_dropout_p=found.attention_p,
        attention_not_cudnn=_not_cudnn(facts, found.attention), grad_mode=inference_grad_mode.fires(facts),
        has_steps=bool(facts.steps),
        batch_norms_per_step=found.batch_norms.size / n, counter_updates_per_step=found.counters.size / n,
        kernel_us_per_step=us(kernel_ns) / n,
        busy_share=ctx.busy_share, idle_us_per_step=us(found.idle.total) / n)
    impact = ctx.per_step(kernel_ns * ctx.busy_share + found.idle.total)
    ev = [evidence(facts, int(i), TrainingOp("dropout")) for i in found.dropouts[:EVIDENCE_OPS]]
    ev += [evidence(facts, int(i), TrainingOp("attention")) for i in found.attention[:EVIDENCE_OPS]]
    ev += [evidence(facts, int(i), TrainingOp("batch_norm")) for i in found.batch_norms[:EVIDENCE_OPS]]
    severity = severity_of(impact.share)
    if not facts.steps:
        severity = Severity.INFO
    elif severity == Severity.INFO:
        severity = Severity.WARNING
    return [Finding(ID, record, impact, ev, severity=severity)]


@dataclass(eq=False)
class _Found:
    steps: int
    dropouts: np.ndarray  # the dropout ops that dropped (a child op under them)
    batch_norms: np.ndarray  # the batch norms in training mode
    kernels: np.ndarray  # the training-only kernels
    idle: Intervals  # the per-op GPU idle under the dropping dropouts and the counter updates
    attention: np.ndarray  # scaled_dot_product_attention calls with dropout_p > 0
    attention_p: float
    counters: np.ndarray  # the batch norms' num_batches_tracked += 1


@per_facts
def _found(facts: Facts) -> _Found | None:
    steps = inference_steps(facts)
    if not steps:
        return None
    ops = step_ops(facts)
    if steps != [-1]:
        ops &= np.isin(facts.event_step, steps)
    dropouts = _dropping(facts, ops)
    norms = _training_norms(facts, ops)
    attention, p = _attention_dropouts(facts, ops)
    if dropouts.size == 0 and norms.size == 0 and attention.size == 0:
        return None
    counters = _counter_updates(facts, ops) if norms.size else np.empty(0, dtype=np.int64)
    return _Found(len(steps), dropouts, norms, _training_kernels(facts, dropouts, norms),
                  gpu_idle.idle_under(facts, np.concatenate([dropouts, counters]), per_op=True), attention, p, counters)


def training_kernels(facts: Facts) -> np.ndarray:
    """The kernels only training mode runs in these inference steps (none where the rule does not fire):
    channels-last leaves them out, as model.eval() removes them whatever the layout."""
    found = _found(facts)
    return found.kernels if found is not None else np.empty(0, dtype=np.int64)


def claimed_idle(facts: Facts) -> Intervals:
    """The per-op GPU idle under the dropouts that drop (in eval they return their input at once) and
    the batch norms' counter updates: overhead-bound, launch-bound and many-calls leave it out."""
    found = _found(facts)
    return found.idle if found is not None else gpu_idle.union(np.empty(0), np.empty(0))



def _dropping(facts: Facts, ops: np.ndarray) -> np.ndarray:
    """The dropout ops with an op under them: in eval, aten::dropout returns its input untouched."""
    candidates = np.flatnonzero(ops & name_mask(facts, DROPOUT))
    if candidates.size == 0:
        return candidates
    children = np.flatnonzero(facts.is_host & facts.trace.category_mask({"cpu_op"}))
    parents = np.unique(facts.parent[children])
    return candidates[np.isin(candidates, parents)]


def _attention_dropouts(facts: Facts, ops: np.ndarray) -> tuple[np.ndarray, float]:
    """The scaled_dot_product_attention calls with dropout_p > 0 (from their recorded Concrete Inputs;
    transformers passes the attention dropout there in train()), and their largest dropout_p."""
    idx = np.flatnonzero(ops & name_mask(facts, SDPA))
    keep, top = [], 0.0
    for i, a in zip(idx.tolist(), op_args(facts, idx.tolist()), strict=True):
        concrete = a.concrete if a is not None else None
        recorded = isinstance(concrete, list) and len(concrete) > SDPA_DROPOUT_ARG
        p = _number(concrete[SDPA_DROPOUT_ARG]) if recorded else 0.0
        if p > 0:
            keep.append(i)
            top = max(top, p)
    return np.asarray(keep, dtype=np.int64), top


def _not_cudnn(facts: Facts, sdpa: np.ndarray) -> bool:
    """Whether these SDPA calls run another backend than cuDNN's: in train() gpu/gpt2_decode_train's run
    flash attention (eval() turned them to cuDNN's, a graph per KV length); gpu/bert_as_written's run
    cuDNN's already, dropout and all."""
    if sdpa.size == 0:
        return False
    inner = np.flatnonzero(facts.is_host & name_mask(facts, CUDNN_ATTENTION))
    return not np.isin(sdpa, nearest_in(facts, index_mask(facts, sdpa), inner)).any()


def _number(text: object) -> float:
    try:
        return float(str(text))
    except ValueError:
        return 0.0


def _counter_updates(facts: Facts, ops: np.ndarray) -> np.ndarray:
    """BatchNorm's `num_batches_tracked += 1` in training mode: aten::add_ on a 0-d long tensor (with
    shapes recorded), one before each training batch norm (gpu/resnet50_train: 53 a step, none in eval)."""
    idx = np.flatnonzero(ops & name_mask(facts, {"aten::add_"}))
    keep = [i for i, a in zip(idx.tolist(), op_args(facts, idx.tolist()), strict=True)
            if a is not None and isinstance(a.dims, list) and a.dims and all(d == [] for d in a.dims)
            and isinstance(a.types, list) and a.types[:1] == ["long int"]]
    return np.asarray(keep, dtype=np.int64)


def _training_norms(facts: Facts, ops: np.ndarray) -> np.ndarray:
    """The batch norms in training mode: by their training argument where shapes were recorded, else
    by a training-only kernel launched under them."""
    idx = np.flatnonzero(ops & name_mask(facts, BATCH_NORM))
    if idx.size == 0:
        return idx
    args = op_args(facts, idx.tolist())
    concrete = [a.concrete if a is not None else None for a in args]
    recorded = np.array([isinstance(c, list) and len(c) > TRAINING_ARG for c in concrete], dtype=bool)
    training = np.array([bool(r) and c[TRAINING_ARG] == "True" for r, c in zip(recorded, concrete, strict=True)],
                        dtype=bool)
    if not recorded.all():
        under = _kernels_under(facts, idx[~recorded])
        ks = under[pattern_mask(facts, BN_TRAINING_KERNEL)[under]]
        mask = index_mask(facts, idx[~recorded])
        training[~recorded] = np.isin(idx[~recorded], nearest_in(facts, mask, facts.owner[ks]))
    return idx[training]


def _training_kernels(facts: Facts, dropouts: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """The kernels eval would not run: all of the dropouts', the batch norms' but the one eval keeps."""
    drop = _kernels_under(facts, dropouts)
    norm = _kernels_under(facts, norms)
    kept = pattern_mask(facts, BN_KEPT_KERNEL) & ~pattern_mask(facts, BN_TRAINING_KERNEL)
    return np.concatenate([drop, norm[~kept[norm]]])


def _kernels_under(facts: Facts, ops: np.ndarray) -> np.ndarray:
    """The kernels whose launching op is one of ops or under one."""
    if ops.size == 0:
        return np.empty(0, dtype=np.int64)
    ks = np.flatnonzero(kernels(facts))
    ks = ks[facts.owner[ks] >= 0]
    return ks[nearest_in(facts, index_mask(facts, ops), facts.owner[ks]) >= 0]
