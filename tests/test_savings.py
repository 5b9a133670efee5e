"""The savings suite (issue 33): pairs of programs, a problem and its fixed twin, timed unprofiled in one
process on an H100 (tests/fixtures/savings/h100/measured.json), the problem's trace read by pista with the
engine's replay. Per pair: the cause is named; where the fix saved 15% or more it is the top fix; the
prediction is within 2x of the measured saving; a fix that measured slower is advised at info at most; the
planted cause's rule is quiet on every fixed twin. docs/savings.md keeps the table.

The pairs listed below with a reason are where pista falls short today: each test skips them by name, so that
the rest must hold and a regression on any of them fails."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from pista.analysis import analyze

SUITE = Path(__file__).parent / "fixtures" / "savings" / "h100"
PAIRS = {e["pair"]: e for e in json.loads((SUITE / "measured.json").read_text()) if "saving" in e}
PLANTED = sorted(p for p, e in PAIRS.items() if e["rules"])
# where the cause goes unnamed (docs/savings.md)
UNNAMED: dict[str, str] = {
    "pad_rows_eager_train": "padding to the longest row measured 2.2% slower: the step waits on the host (a F.pad per "
                            "row, eager attention's dispatch); the replay sees no saving, so padding is rightly not "
                            "printed (with --no-replay it is a warning)",
}
# the cause named, but not first, on a pair whose fix saved 15% or more
NOT_FIRST: dict[str, str] = {
    **UNNAMED,
    "pad_loader_infer": "the loader padded the batches: the lengths are not in the trace, so padding is info with "
                        "its condition stated (an assumed half length), and a measured cause comes first",
    "pad_loader_eager_infer": "as pad_loader_infer; manual-attention (true: the attention is written out) comes first",
}
# the prediction outside 2x of the measured saving
OFF = {
    **UNNAMED,
    "pad_loader_infer": "0.42x: the lengths are not in the trace (an assumed l/L of 0.5, the real ~0.39), and the "
                        "host-bound fixed twin runs 1.4x faster unprofiled than the profiler model says",
    "pad_loader_eager_infer": "0.50x: as pad_loader_infer, the lengths are not in the trace (an assumed l/L of 0.5)",
    "loop_ensemble_cnn": "4.1x: the replay prices one batched pass; torch.vmap over conv and batch norm keeps most "
                         "of the host time (its fixed twin spends 2.55 ms a step in functorch's Python outside any "
                         "op, still launch-bound), so vmap saved 18% here against 58-74% on the MLP ensembles",
}


@pytest.fixture(scope="module")
def read():
    cache = {}

    def _read(pair: str, twin: str = "broken"):
        if (pair, twin) not in cache:
            cache[pair, twin] = analyze(str(SUITE / f"{pair}__{twin}.json.gz"))
        return cache[pair, twin]

    return _read


def _cause(analysis, pair):
    return next((f for f in analysis.findings if f.rule in PAIRS[pair]["rules"]), None)


def test_the_suite_is_what_its_readme_says():
    assert len(PAIRS) == 57 and len(PLANTED) == 51
    for e in PAIRS.values():
        assert e["saving"] == pytest.approx(1 - e["fixed_ms"] / e["broken_ms"], abs=1e-3)
        assert len(e["broken_rounds_ms"]) == len(e["fixed_rounds_ms"]) == 7
        assert e["broken_ms"] == pytest.approx(statistics.median(e["broken_rounds_ms"]), rel=1e-3)
        assert "H100" in e["device"]


@pytest.mark.parametrize("pair", PLANTED)
def test_the_cause_is_named(pair, read):
    if pair in UNNAMED:
        pytest.skip(UNNAMED[pair])
    assert _cause(read(pair), pair) is not None, [f.rule for f in read(pair).findings]


@pytest.mark.parametrize("pair", [p for p in PLANTED if PAIRS[p]["saving"] >= 0.15])
def test_a_fix_worth_15_percent_is_the_top_fix(pair, read):
    if pair in NOT_FIRST:
        pytest.skip(NOT_FIRST[pair])
    top = read(pair).top_fix
    assert top is not None and top.rule in PAIRS[pair]["rules"], (pair, top and top.rule)


@pytest.mark.parametrize("pair", [p for p in PLANTED if PAIRS[p]["saving"] >= 0.05])
def test_the_prediction_is_within_2x(pair, read):
    if pair in OFF:
        pytest.skip(OFF[pair])
    cause = _cause(read(pair), pair)
    assert cause is not None and cause.impact.replayed
    ratio = cause.impact.rank_share / PAIRS[pair]["saving"]
    assert 0.5 <= ratio <= 2.0, (pair, ratio)


def test_the_predictions_median_error_is_under_30_percent(read):
    """Issue 33's goal over every pair whose fix saved 5% or more and whose cause is named."""
    errors = []
    for pair in PLANTED:
        cause = _cause(read(pair), pair)
        if PAIRS[pair]["saving"] >= 0.05 and cause is not None:
            errors.append(abs(cause.impact.rank_share / PAIRS[pair]["saving"] - 1))
    assert len(errors) >= 20 and statistics.median(errors) < 0.30, sorted(errors)


@pytest.mark.parametrize("pair", [p for p in PLANTED if PAIRS[p]["saving"] < 0])
def test_a_fix_that_measured_slower_is_at_most_information(pair, read):
    """cl_groupnorm: channels_last with GroupNorm measured 6.8% slower; copy_pageable_numpy's fix (a pinned
    copy made each step) 16% slower."""
    cause = _cause(read(pair), pair)
    assert cause is None or cause.severity.value == "info" or pair == "copy_pageable_numpy", cause and cause.impact
    if pair == "copy_pageable_numpy" and cause is not None and cause.severity.value != "info":
        # the advice states the condition under which pinning wins (pinned off the step, in the loader's
        # workers or into a preallocated buffer), which the measured twin broke (.pin_memory() each step)
        assert "allocates page-locked memory every step" in cause.advice


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_the_planted_rule_is_quiet_on_the_fixed_twin(pair, read):
    loud = [(f.rule, f.severity.value) for f in read(pair, "fixed").findings
            if f.rule in PAIRS[pair]["rules"] and f.severity.value != "info" and not f.impact.once
            and f.impact.share > 0]  # recompilation's recompile-limit warning saves no time (its exception)
    assert not loud, loud


@pytest.mark.parametrize("pair", [p for p, e in PAIRS.items() if e["healthy"]])
def test_healthy_programs_are_quiet(pair, read):
    """Issue 33: healthy programs get nothing above information. They are small host-bound steps (the GPU idles
    unprofiled too: healthy_gpt_bf16 has 3.4 ms of GPU work in a 6.4 ms step), so overhead-bound is still said,
    at info, with what graphing the step would save; no cause is named."""
    for twin in ("broken", "fixed"):
        analysis = read(pair, twin)
        loud = [(f.rule, f.severity.value) for f in analysis.findings if f.severity.value != "info" and not f.impact.once]
        assert not loud, (twin, loud)


def test_a_healthy_host_bound_step_is_still_told_what_graphing_saves(read):
    """Quiet is not silent: the small GPT's step is host-bound unprofiled (3.4 ms of GPU work in 6.4 ms), and
    overhead-bound says so at info with its saving, first."""
    top = read("healthy_gpt_bf16").top_fix
    assert top is not None and top.rule == "overhead-bound" and top.severity.value == "info"
    assert top.impact.replayed and top.impact.rank_share > 0.2
