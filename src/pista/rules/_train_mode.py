"""Inference steps run in train mode: the dropouts that drop, the batch norms in training mode, their
training-only kernels and the per-op GPU idle under them: not a rule.

inference-train-mode reports them; channels-last leaves their kernels out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from pista.opargs import op_args
from pista.query import name_mask, nearest_in, pattern_mask
from pista.rules._common import index_mask, inference_steps, kernels, step_ops
from pista.rules._idle import idle_under
from pista.trace.facts import Facts, Intervals, per_facts

# the thresholds below are inference-train-mode's (`pista explain inference-train-mode`,
# [tool.pista.rules.inference-train-mode])
THRESHOLDS_OF = "inference-train-mode"

DROPOUT = frozenset({"aten::dropout", "aten::feature_dropout", "aten::alpha_dropout", "aten::feature_alpha_dropout"})
BATCH_NORM = frozenset({"aten::batch_norm"})
SDPA = frozenset({"aten::scaled_dot_product_attention"})
# scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
SDPA_DROPOUT_ARG = 4
# aten::batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
TRAINING_ARG = 5
# Kernels only training-mode batch norm runs: ATen's statistics pass (gpu/resnet50_train: 53 a step,
# none in gpu/resnet50_nograd) and cuDNN's training forward.
BN_TRAINING_KERNEL = re.compile(r"batch_norm_collect_statistics|bn_fw_tr_")
# Of a training batch norm's kernels, the one eval keeps (gpu/resnet50_nograd runs it alone with an
# elementwise one); the rest is training-only.
BN_KEPT_KERNEL = re.compile(r"batch_norm_transform_input|bn_fw_")


@dataclass(eq=False)
class TrainingOps:
    steps: int
    dropouts: np.ndarray  # the dropout ops that dropped (a child op under them)
    batch_norms: np.ndarray  # the batch norms in training mode
    kernels: np.ndarray  # the training-only kernels
    idle: Intervals  # the per-op GPU idle under the dropping dropouts and the counter updates
    attention: np.ndarray  # scaled_dot_product_attention calls with dropout_p > 0
    attention_p: float
    counters: np.ndarray  # the batch norms' num_batches_tracked += 1


@per_facts
def training_ops(facts: Facts) -> TrainingOps | None:
    """What train mode runs in the inference steps that eval would not (None where it runs nothing)."""
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
    return TrainingOps(len(steps), dropouts, norms, _training_kernels(facts, dropouts, norms),
                       idle_under(facts, np.concatenate([dropouts, counters]), per_op=True), attention, p, counters)


def training_kernels(facts: Facts) -> np.ndarray:
    """The kernels only training mode runs in these inference steps (none where inference-train-mode does not fire):
    channels-last leaves them out, as model.eval() removes them whatever the layout."""
    found = training_ops(facts)
    return found.kernels if found is not None else np.empty(0, dtype=np.int64)


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
        concrete: Any = a.concrete if a is not None else None  # the recorded Concrete Inputs, a list
        recorded = isinstance(concrete, list) and len(concrete) > SDPA_DROPOUT_ARG
        p = _number(concrete[SDPA_DROPOUT_ARG]) if recorded else 0.0
        if p > 0:
            keep.append(i)
            top = max(top, p)
    return np.asarray(keep, dtype=np.int64), top


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
    concrete: list[Any] = [a.concrete if a is not None else None for a in args]
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
