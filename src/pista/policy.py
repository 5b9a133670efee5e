"""Policy: how much a finding matters and what to read first. The severity a saving earns, the verdict
on a window, the reading order of the findings and the one fix to start with.

Kept free of heavy imports: `pista.finding` grades every finding it builds with `severity_of`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pista.finding import Finding

# Verdict thresholds, from the H200 fixtures: warm 64x64 matmul_add spends 43x more host time than
# GPU time with the GPU busy 2.2% of the window; warm 4096 spends 1.1x with the GPU busy 79%. The
# eager training loops sit in between and are host-bound all the same: big_gpt_eager_20steps 4.5x
# at 34% busy (16,939 sub-ms gaps), series_linear_train 4.0x at 33%, capture_profile_item 3.8x at
# 36%; balanced stay seed_mm4096_compile (2.5x at 37%) and capture_mm4096_compile_sync (2.0x, 48%).
OVERHEAD_RATIO = 3.0  # Self CPU total / Self CUDA total at or above which the host dominates
OVERHEAD_MAX_GPU_BUSY = 0.4  # ... provided the GPU sits idle for at least 60% of the window
# Kernel (compute) busy share at or above which the GPU is the limit; copies and memsets do not
# count: gpu/pageable_memcpy is 90% busy copying and 0% computing.
COMPUTE_MIN_GPU_BUSY = 0.6
COMPUTE_MAX_RATIO = 3.0
# Share of the median step the host spends in data regions (the DataLoader's `enumerate(DataLoader)#...`, regions
# named for data: pista.hosttime's "data") at or above which a window the GPU does not keep busy is input-bound: the
# loop waits for its batches, and neither per-op overhead nor the GPU sets its pace (review 5: t4_mlp_fashionmnist
# fp32 and amp, 91% and 81% of the step in the DataLoader, read "overhead-bound"; param_resnet_kineto 51%,
# "balanced"; kineto_resnet50_w0_2021 39% with the GPU 57% busy. kineto_resnet50_w0_early's 25% and
# savings/h100's loader_pageable (8%, its copies the cause) stay as they were).
INPUT_MIN_SHARE = 0.3
# Share of the window one-time costs take (set-up, a first compile: the findings whose impact is once) at or above
# which the verdict is "start-up": the window holds little else, and host against device time there weighs the
# start-up, not the steps (review 6: six GPUPuzzlers and CS521 windows, 98-100% cudaFree, first launches and a first
# compile, read "overhead-bound" above a notice saying they were one-time; gpu/compile_warmup's is 100%).
START_UP_SHARE = 0.9


class Severity(str, Enum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "critical": 2}[self.value]


# Severity follows what fixing a finding saves, as a share of the median step (issue 14): a fifth of
# the step is the first thing to fix, a twentieth is worth a change, below that it is information.
CRITICAL_SHARE = 0.20
WARNING_SHARE = 0.05
# The top fix is the biggest finding that saves at least this share of the step; below it nothing is
# worth doing first (seed_mm4096_warm: its GEMM runs at the card's measured ceiling).
TOP_FIX_MIN_SHARE = WARNING_SHARE
# Findings whose saving is the remainder once every specific cause is fixed, and whose fix is the
# largest change (overhead-bound: capture the step as a CUDA graph, compile it). The top fix is a
# specific finding worth TOP_FIX_MIN_SHARE where there is one: on gpu/host_sync_item the per-op rest
# (55%) outranks the syncs (38%), yet the syncs come out first, since a step that syncs cannot be
# graphed; on series_mlp_eager AdamW(fused=True) took the step from 6.1 to 3.4 ms unprofiled.
UMBRELLA_RULES = frozenset({"overhead-bound", "compute-bound"})
# ... provided the specific finding saves at least this share of what the umbrella does: gpu/gpt2_conv1d's
# autocast-casts (5.8% against overhead-bound's 57.5%) and layout_r50_cl_bf16's (6.9% against 66.8%) are
# second fixes; series_mlp_eager's (16.8/59.6) and gpu/adamw_foreach_bf16's fused=True (14.1/64.2,
# REVIEW.md's 6.1 -> 3.4 ms) stay first.
UMBRELLA_YIELD = 0.2
# Findings that say the program's results are wrong, not only slow: they come first, whatever they save
# (gpu/resnet50_train: batch norm on batch statistics in inference; an expert fixes that before speed),
# unless they are info (said under a condition).
WRONG_RESULTS_RULES = frozenset({"inference-train-mode"})


SEVERITY_ORDER = ("info", "warning", "critical")


# A one-time cost (set-up, a first compile, the profiler's buffers) is at most a warning: it slows the
# window it was profiled in, not the steps that follow. Spread over the steps it read as 100% of a
# step on gpu/eval_first_call (48.5 ms once in a 3.8 ms step) and gpu/profiler_first_step's shares
# summed to 121%; an expert puts the steady-state fix first and says "warm up" after it.
ONE_TIME_MAX_SEVERITY = Severity.WARNING


def severity_of(share: float, once: bool = False) -> Severity:
    if share >= CRITICAL_SHARE:
        severity = Severity.CRITICAL
    else:
        severity = Severity.WARNING if share >= WARNING_SHARE else Severity.INFO
    return min(severity, ONE_TIME_MAX_SEVERITY, key=lambda s: s.rank) if once else severity


def one_time_share(findings: Iterable[Finding]) -> float:
    """The share of the window the one-time findings take, together (at most 1)."""
    return min(1.0, sum(f.impact.share for f in findings if f.impact.once))


def start_up_verdict(verdict: str, once_share: float) -> str:
    """"start-up" where one-time costs take START_UP_SHARE of a GPU window or more, else the verdict."""
    return "start-up" if verdict != "cpu-only" and once_share >= START_UP_SHARE else verdict


def input_verdict(verdict: str, input_share: float) -> str:
    """The verdict to print: "input-bound" where the host waits for data at least INPUT_MIN_SHARE of the step and
    the GPU is not the limit (an overhead-bound or balanced window), else the verdict as weighed by verdict_of."""
    return "input-bound" if verdict in ("overhead-bound", "balanced") and input_share >= INPUT_MIN_SHARE else verdict


def verdict_of(has_gpu: bool, cpu_us: float, device_us: float, busy_share: float | None,
               compute_share: float | None, host_ops: bool = True) -> str:
    """overhead-bound | compute-bound | balanced | cpu-only, from Self CPU and Self CUDA totals (µs) and the
    window's GPU busy and kernel (compute) busy shares. Without `host_ops` (the trace records runtime calls but no
    op: CUDA activity alone) the host's time is not known, so it is never overhead-bound: a4000_sevit_cold's
    10.1 s of runtime calls, mostly start-up, read as per-op overhead with torch.compile advice (review 4)."""
    if not has_gpu:
        return "cpu-only"
    if cpu_us <= 0:
        return "balanced"  # no host time recorded (no host events, zero durations): nothing to weigh
    if compute_share is not None and compute_share >= COMPUTE_MIN_GPU_BUSY and cpu_us <= COMPUTE_MAX_RATIO * device_us:
        return "compute-bound"
    if host_ops and cpu_us >= OVERHEAD_RATIO * device_us and busy_share is not None \
            and busy_share < OVERHEAD_MAX_GPU_BUSY:
        return "overhead-bound"
    return "balanced"


def is_symptom(finding: Finding) -> bool:
    """Whether the finding is a symptom (pista.engine credits it after the causes, with what they leave): its
    own say, which the analysis sets to its rule's SYMPTOM where the rule left it None (pista.analysis._check).
    A finding no rule's check returned (a test's, a cross-rank straggler) is a cause unless it says otherwise."""
    return bool(finding.symptom)


def order_key(f: Finding) -> tuple[int, bool, bool, float, float, float]:
    """Findings in reading order: by severity, a steady cost before a one-time one of the same
    severity, a cause before a symptom (what is left once the causes are fixed), then by what fixing saves."""
    assert f.severity is not None
    return (-f.severity.rank, f.impact.once, is_symptom(f), -f.impact.order_share, -f.impact.us, _first_ts(f))


def _first_ts(finding: Finding) -> float:
    return min((e.ts_us for e in finding.evidence), default=float("inf"))


def top_fix(findings: Sequence[Finding]) -> Finding | None:
    """The finding to start with: one that makes the results wrong (WRONG_RESULTS_RULES), else the
    specific one that saves most, if it saves enough to be worth it, else the umbrella one (see
    UMBRELLA_RULES); steady and unconditional findings before one-time and info ones."""
    wrong = _wrong_results(findings)
    if wrong is not None:
        return wrong
    worth = _unconditional_first(_steady_first(_worth_fixing(findings)))
    return _specific_first(worth)


def _wrong_results(findings: Iterable[Finding]) -> Finding | None:
    """The first finding that says the results are wrong, unless it is only info."""
    return next((f for f in findings if f.rule in WRONG_RESULTS_RULES and f.severity != Severity.INFO), None)


def _worth_fixing(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that save at least TOP_FIX_MIN_SHARE, biggest first, but a wrong-results finding said only under
    its condition (inference-train-mode at info without steps: if the window is a training forward, model.eval()
    would break the training, so it is never the fix to start with)."""
    return sorted((f for f in findings if f.impact.rank_share >= TOP_FIX_MIN_SHARE and not _unsure_wrong(f)),
                  key=lambda f: (-f.impact.order_share, -f.impact.us))


def _unsure_wrong(f: Finding) -> bool:
    return f.rule in WRONG_RESULTS_RULES and f.severity == Severity.INFO and f.severity_fixed


def _steady_first(worth: list[Finding]) -> list[Finding]:
    """A one-time cost comes first only where no steady cost is worth fixing."""
    return [f for f in worth if not f.impact.once] or worth


def _unconditional_first(worth: list[Finding]) -> list[Finding]:
    """A finding said under a condition (info above the warning share: cpu-fp32-gemm's "on a CPU with native
    bf16") comes first only where no unconditional one is (an expert review: a 30% conditional dtype change came
    before an 18.5% anomaly detection left on, free to turn off)."""
    return [f for f in worth if not _conditional(f)] or worth


def _conditional(f: Finding) -> bool:
    """At info by the rule's own choice, though worth a warning (a symptom at info is quiet by the engine's
    policy, not conditional)."""
    return (f.severity == Severity.INFO and f.severity_fixed and not is_symptom(f)
            and f.impact.rank_share >= WARNING_SHARE)


def _umbrella_rules(worth: list[Finding]) -> set[str]:
    """The rules whose saving is what is left once the specific causes are fixed: UMBRELLA_RULES, and a
    replayed symptom (pista.engine), whatever its rest (issue 33: in 8 of 9 measured pairs a symptom came
    first where the planted cause saved 15-95%; savings/h100/autocast_train_small: the weight casts, 18% of
    the step, before the 64% left to launch-bound). A graph cannot hold a sync or a graph break."""
    return {f.rule for f in worth if f.rule in UMBRELLA_RULES or (f.impact.replayed and is_symptom(f))}


def _specific_first(worth: list[Finding]) -> Finding | None:
    """The biggest specific finding that yields at least UMBRELLA_YIELD of the largest (unreplayed) umbrella's
    saving, else the biggest finding."""
    umbrellas = _umbrella_rules(worth)
    umbrella = max((f.impact.rank_share for f in worth if f.rule in umbrellas and not f.impact.replayed),
                   default=0.0)
    specific = (f for f in worth if f.rule not in umbrellas and f.impact.rank_share >= UMBRELLA_YIELD * umbrella)
    return next(specific, worth[0] if worth else None)
