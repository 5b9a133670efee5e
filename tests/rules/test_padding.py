"""padding on the measured pairs: a pad to max_length seen in the step, batches that arrive padded (a key padding
mask at one length in every step), a compiled model padded to stop recompiling; and the twins that pad each
batch to its longest row, a GPT without a padding mask and a compiled model fed new lengths, which stay quiet."""

from __future__ import annotations

import math
import statistics

import pytest
import raw

from pista.rules.padding import ASSUMED_RATIO, COMPILED_PAD_MULTIPLE, ID

SAVINGS = "savings/h100/"


def _finding(analysis_of, name):
    return next((f for f in analysis_of(name).findings if f.rule == ID), None)


def _pads(name: str) -> list[tuple[int, int, int]]:
    """From the raw JSON: each step's pads of a [B, l] tensor, as (B, l, padded length)."""
    out = []
    for e in raw.in_steps(name, raw.complete(name, "cpu_op", "aten::constant_pad_nd")):
        dims, pad = e["args"]["Input Dims"][0], e["args"]["Concrete Inputs"][1]
        amounts = [int(x) for x in pad.strip("[]").split(",")]
        out.append((dims[0], dims[1], dims[1] + sum(amounts)))
    return out


def _gpu_us_per_step(name: str) -> float:
    """The device work launched inside the steps, per step."""
    spans = raw.steps(name)
    lo, hi = float(spans[0]["ts"]), max(float(s["ts"]) + float(s["dur"]) for s in spans)
    return sum(float(k["dur"]) for k in raw.device_work(name) if lo <= raw.launched_at(name, k) < hi) / len(spans)


def test_a_pad_to_max_length_in_the_step_is_seen(analysis_of):
    name = SAVINGS + "pad_max_length_train__broken"
    f = _finding(analysis_of, name)
    pads = _pads(name)
    assert f is not None and f.record.seen and not f.record.compiled
    assert f.record.length == max(p for _, _, p in pads) == 512
    assert f.record.longest == pytest.approx(statistics.mean(lo for _, lo, _ in pads))
    assert f.record.batch == pads[0][0]
    assert f.severity.value in ("warning", "critical")
    assert {e.name for e in f.evidence} == {"aten::constant_pad_nd"} and "pad_sequence" in f.advice


def test_the_edit_leaves_about_the_fixed_twins_gpu_work(analysis_of):
    """The kernels at the batch's longest row: what the GPU keeps after the edit is near what the twin that pads
    to the longest row runs (the unchanged rest: the optimizer, the loss; the host's copies of the mask)."""
    name = SAVINGS + "pad_max_length_train"
    f = _finding(analysis_of, name + "__broken")
    kept = _gpu_us_per_step(name + "__broken") - f.record.saved_gpu_us
    fixed = _gpu_us_per_step(name + "__fixed")
    assert 0.67 < kept / fixed < 1.5


def test_batches_that_arrive_padded_are_likely_padding_at_info(analysis_of):
    name = SAVINGS + "pad_loader_infer__broken"
    f = _finding(analysis_of, name)
    masks = [e["args"]["Input Dims"][3] for e in raw.in_steps(name, raw.complete(
        name, "cpu_op", "aten::scaled_dot_product_attention"))]
    assert masks and all(m == masks[0] for m in masks) and masks[0][1:3] == [1, 1]
    assert f is not None and not f.record.seen and f.record.length == masks[0][3]
    assert f.severity.value == "info" and f.record.ratio == ASSUMED_RATIO
    assert "not in the trace" in f.message and "padding='longest'" in f.fix


def test_a_compiled_model_pads_to_a_multiple_of_64(analysis_of):
    """recompile_shapes' fixed twin pads every batch to 512 so that one graph serves them: the fix keeps a few
    graphs, padding to the next multiple of 64."""
    name = SAVINGS + "recompile_shapes__fixed"
    f = _finding(analysis_of, name)
    pads = _pads(name)
    assert f is not None and f.record.compiled
    want = statistics.mean(math.ceil(lo / COMPILED_PAD_MULTIPLE) * COMPILED_PAD_MULTIPLE / p for _, lo, p in pads)
    assert f.record.ratio == pytest.approx(want)
    assert "multiple of 64" in f.fix and "mark_dynamic" in f.advice


@pytest.mark.parametrize("name", [SAVINGS + "pad_max_length_train__fixed", SAVINGS + "pad_loader_infer__fixed",
                                  SAVINGS + "healthy_gpt_bf16__broken", SAVINGS + "recompile_shapes__broken",
                                  "gpu/bert_as_written", "gpu/attn_sdpa", "gpu/attn_hf_eager", "gpu/attn_manual"])
def test_batches_padded_to_their_longest_row_and_models_without_padding_stay_quiet(analysis_of, name):
    assert _finding(analysis_of, name) is None


def test_rows_padded_one_by_one_are_a_batch(analysis_of):
    """pad_rows_eager_train: F.pad on each row to 384, then a stack: the step's rows are the batch, its longest the
    longest row. (Its fix measured 2.2% slower: the step waits on the host, and the engine's replay, which the
    savings suite reads, says no saving; the rule's own estimate is what is read here.)"""
    name = SAVINGS + "pad_rows_eager_train__broken"
    rows = [e for e in raw.in_steps(name, raw.complete(name, "cpu_op", "aten::constant_pad_nd"))
            if len(e["args"]["Input Dims"][0]) == 1]
    steps = raw.steps(name)
    f = _finding(analysis_of, name)
    assert f is not None and f.record.seen and f.record.batch == len(rows) // len(steps) == 32
    longest = [max(e["args"]["Input Dims"][0][0] for e in rows if raw.inside(s, e)) for s in steps]
    assert f.record.longest == pytest.approx(statistics.mean(longest)) and f.record.length == 384


def test_a_mask_added_to_written_out_scores_is_read(analysis_of):
    """pad_loader_eager_infer: scores + an additive [B, 1, 1, L] mask (Hugging Face's eager attention)."""
    name = SAVINGS + "pad_loader_eager_infer__broken"
    adds = [e["args"]["Input Dims"] for e in raw.complete(name, "cpu_op", "aten::add")
            if len(e["args"].get("Input Dims", [])) > 1 and len(e["args"]["Input Dims"][1]) == 4]
    f = _finding(analysis_of, name)
    assert adds and f is not None and not f.record.seen and f.severity.value == "info"
    assert f.record.length == adds[0][1][3] and adds[0][1][1:3] == [1, 1]
