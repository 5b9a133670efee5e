"""The inference-train-mode rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
inference-train-mode`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/inference_train_mode.ftl."""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Finding, Record, Severity, severity_of
from pista.query import name_mask, nearest_in
from pista.rules._common import evidence, index_mask, us
from pista.rules._grad_mode import grad_mode_fires
from pista.rules._idle import union
from pista.rules._train_mode import training_ops
from pista.trace.facts import Facts, Intervals

ID = "inference-train-mode"
# launch-bound and many-calls leave this rule's claimed_idle out before they count (eval() is the fix, not a graph)
CLAIMS_FIRST = True
CUDNN_ATTENTION = frozenset({"aten::_scaled_dot_product_cudnn_attention"})
EVIDENCE_OPS = 2
# Of a training-mode batch norm's CPU time, the share eval() saves on a CPU-only trace (running statistics: no
# statistics pass, no running-stat update): measured with torch 2.x on this project's 2-core CPU, BatchNorm2d under
# no_grad at ResNet shapes (8x64x56x56, 8x128x28x28, 8x256x14x14, 1x64x112x112), train against eval: 63-94% less;
# the low end is taken (review 5: cpu_macos_resnet18's batch norms are 95.5 ms of a 472 ms window, priced 0 before).
# A dropout that drops costs all of its CPU time: in eval it returns its input.
CPU_BATCH_NORM_EVAL_SAVING = 0.6


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
    cpu_us_per_step: float = 0.0  # a CPU-only trace: what eval() saves of the training ops' host time
    batch_norm_saving: float = CPU_BATCH_NORM_EVAL_SAVING  # ... of a batch norm's (a dropout's: all of it)


class TrainingOp(Record):
    """Note on an op that ran in training mode."""

    kind: str  # "dropout", "attention" (SDPA with dropout_p > 0) or "batch_norm"


def check(ctx: Context) -> list[Finding]:
    found = training_ops(ctx.facts)
    if found is None:
        return []
    facts = ctx.facts
    n = found.steps
    kernel_ns = float(facts.trace.dur[found.kernels].sum())
    # a CPU-only program (no device work and no launch: zoology_a100x8_inference launches to an A100 whose kernels
    # were not recorded, and its batch norms' host time is dispatch, not the work)
    cpu_only = not facts.has_gpu and not facts.is_launch.any()
    cpu_ns = _cpu_saved_ns(facts, found.dropouts, found.batch_norms) if cpu_only else 0.0
    record = InferenceTrainMode(
        steps=n, of_steps=len(facts.steps) or 1, dropouts_per_step=found.dropouts.size / n,
        attention_dropouts_per_step=found.attention.size / n, attention_dropout_p=found.attention_p,
        attention_not_cudnn=_not_cudnn(facts, found.attention), grad_mode=grad_mode_fires(facts),
        has_steps=bool(facts.steps),
        batch_norms_per_step=found.batch_norms.size / n, counter_updates_per_step=found.counters.size / n,
        kernel_us_per_step=us(kernel_ns) / n,
        busy_share=ctx.busy_share, idle_us_per_step=us(found.idle.total) / n, cpu_us_per_step=us(cpu_ns) / n)
    impact = ctx.per_step(kernel_ns * ctx.busy_share + found.idle.total + cpu_ns)
    ev = [evidence(facts, int(i), TrainingOp("dropout")) for i in found.dropouts[:EVIDENCE_OPS]]
    ev += [evidence(facts, int(i), TrainingOp("attention")) for i in found.attention[:EVIDENCE_OPS]]
    ev += [evidence(facts, int(i), TrainingOp("batch_norm")) for i in found.batch_norms[:EVIDENCE_OPS]]
    severity = severity_of(impact.share)
    if not facts.steps:
        severity = Severity.INFO
    elif severity == Severity.INFO:
        severity = Severity.WARNING
    return [Finding(ID, record, impact, ev, severity=severity)]


def _cpu_saved_ns(facts: Facts, dropouts: np.ndarray, batch_norms: np.ndarray) -> float:
    """On a CPU-only trace, the host time eval() saves: the dropping dropouts' whole time, and
    CPU_BATCH_NORM_EVAL_SAVING of the training batch norms'."""
    dur = facts.trace.dur
    return float(dur[dropouts].sum()) + CPU_BATCH_NORM_EVAL_SAVING * float(dur[batch_norms].sum())


def claimed_idle(facts: Facts) -> Intervals:
    """The per-op GPU idle under the dropouts that drop (in eval they return their input at once) and
    the batch norms' counter updates: overhead-bound, launch-bound and many-calls leave it out."""
    found = training_ops(facts)
    return found.idle if found is not None else union(np.empty(0), np.empty(0))



def _not_cudnn(facts: Facts, sdpa: np.ndarray) -> bool:
    """Whether these SDPA calls run another backend than cuDNN's: in train() gpu/gpt2_decode_train's run
    flash attention (eval() turned them to cuDNN's, a graph per KV length); gpu/bert_as_written's run
    cuDNN's already, dropout and all."""
    if sdpa.size == 0:
        return False
    inner = np.flatnonzero(facts.is_host & name_mask(facts, CUDNN_ATTENTION))
    return not np.isin(sdpa, nearest_in(facts, index_mask(facts, sdpa), inner)).any()
