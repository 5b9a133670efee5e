"""python-loop on real traces: the measured pairs' loops (per sample, per model), a CPU loop over slices, and the
traces whose repeated ops are a model's layers, a loader's collate or an optimizer's loop, which must stay quiet."""

from __future__ import annotations

import json

import pytest
import raw

from pista.analysis import analyze
from pista.rules.python_loop import ID

SAVINGS = "savings/h100/"


def _outer_names(name: str) -> list[list[str]]:
    """From the raw JSON: per step, the main thread's cpu_ops under no other cpu_op, in time order."""
    ops = raw.complete(name, "cpu_op")
    out = []
    for s in raw.steps(name):
        lo, hi = float(s["ts"]), float(s["ts"]) + float(s["dur"])
        inside = sorted((e for e in ops if lo <= float(e["ts"]) < hi and e["tid"] == s["tid"]), key=lambda e: (e["ts"], -e["dur"]))
        top, end = [], -1.0
        for e in inside:
            if float(e["ts"]) >= end:
                top.append(e["name"])
                end = float(e["ts"]) + float(e["dur"])
        out.append(top)
    return out


def _finding(analysis_of, name):
    return next((f for f in analysis_of(name).findings if f.rule == ID), None)


def test_a_loss_summed_sample_by_sample_is_a_loop_per_sample(analysis_of):
    name = SAVINGS + "loop_per_sample_loss__broken"
    f = _finding(analysis_of, name)
    assert f is not None and f.record.kind == "sample"
    # the raw step: the loss loop is select, slice, slice, cross_entropy_loss, mul, add, once per sample
    step = _outer_names(name)[1]
    assert f.record.passes == step.count("aten::cross_entropy_loss") == step.count("aten::select") == 32
    assert f.record.block[0] == "aten::select" and "aten::cross_entropy_loss" in f.record.block
    assert f.severity.value == "critical" and "reduction='none'" in f.advice
    assert [e.name for e in f.evidence] == ["aten::select", "aten::select"]


def test_an_ensemble_run_model_by_model_is_a_loop_per_model(analysis_of):
    name = SAVINGS + "loop_ensemble__broken"
    f = _finding(analysis_of, name)
    assert f is not None and f.record.kind == "model"
    step = _outer_names(name)[1]
    # 16 models of three Linear layers, their outputs stacked once
    assert step[-1] == "aten::stack" and f.record.passes == step.count("aten::linear") // 3 == 16
    assert "torch.func.stack_module_state" in f.advice and "vmap" in f.fix
    assert f.record.source  # the trace has stacks: the user's frame is named


def test_a_cpu_loop_over_slices(analysis_of):
    f = _finding(analysis_of, "gpu/python_loop_cpu")
    step = _outer_names("gpu/python_loop_cpu")[0]
    assert f is not None and f.record.kind == "sample" and f.record.passes == step.count("aten::matmul")


def test_the_replayed_saving_is_near_the_measured_one():
    """The engine replays one batched pass: within 1.5x of what the fixed twins measured unprofiled."""
    import json

    from conftest import fixture

    measured = {e["pair"]: e["saving"] for e in json.loads(fixture(SAVINGS + "measured.json").read_text())}
    for pair in ("loop_per_sample_loss", "loop_ensemble"):
        f = next(f for f in analyze(fixture(SAVINGS + pair + "__broken")).findings if f.rule == ID)
        assert f.impact.replayed and 0.67 <= f.impact.rank_share / measured[pair] <= 1.5, (pair, f.impact)


def test_layers_loaders_optimizers_and_fixed_twins_are_quiet(analysis_of):
    # a 4-layer GPT and a 12-layer MLP repeat their blocks (layers, not a loop); resnet_loader's collate makes a
    # tensor per sample and stacks them (a loader's), data_loading_per_sample indexes a dataset per sample
    # (data-loading's), optim_adam_loop updates parameter by parameter (unfused-optimizer's)
    for name in ("healthy_gpt_bf16__broken", "sync_cuda_synchronize__broken", "optim_adam_loop__broken",
                 "loop_per_sample_loss__fixed", "loop_ensemble__fixed", "gelu_hf_new__broken"):
        assert _finding(analysis_of, SAVINGS + name) is None, name
    for name in ("gpu/resnet_loader", "gpu/data_loading_per_sample", "big_gpt_eager_20steps", "series_mlp_eager"):
        assert _finding(analysis_of, name) is None, name


@pytest.mark.parametrize("name, model_op, per_pass", [("loop_ensemble_cnn", "aten::conv2d", 3),
                                                      ("loop_ensemble_train", "aten::linear", 3)])
def test_an_ensemble_summed_member_by_member_is_a_loop_per_model(analysis_of, name, model_op, per_pass):
    """Ensembles written as Python sums (`sum(m(x) for m in models) / n`; a loss summed over 4 members): no stack
    gathers them, and 4-5 members are fewer than a per-sample loop needs. Every pass starts from the same input
    and ends adding a result of another shape: a loop per model."""
    f = _finding(analysis_of, SAVINGS + name + "__broken")
    assert f is not None and f.record.kind == "model" and f.record.block[-1] == "aten::add"
    step = _outer_names(SAVINGS + name + "__broken")[1]
    assert f.record.passes == step.count(model_op) // per_pass == step.count("aten::add")
    assert _finding(analysis_of, SAVINGS + name + "__fixed") is None


@pytest.mark.parametrize("name", ["gpu/kv_flash", "savings/h100/optim_manual_sgd__broken", "healthy_gpt_bf16__broken"])
def test_few_repeats_without_a_model_op_are_not_an_ensemble(analysis_of, name):
    """GPT-2's q/k/v view and transpose before a cat (3 passes, no model op), a hand-written SGD's per-layer
    mul_/add_ (24 passes, no model op, no gather), a GPT's residual blocks (they add what has their input's
    shape) stay quiet."""
    name = name if "/" in name else SAVINGS + name
    f = _finding(analysis_of, name)
    assert f is None or f.record.kind != "model"


def test_a_layers_own_slice_repeated_is_not_a_loop_per_sample(analysis_of):
    """TraceLens' TimeSformer: each of the 12 encoder layers starts by slicing the same [1, 25089, 768] tensor
    the same way (x[:, 0:]); a per-sample loop's index counts (select(logits, 0, i))."""
    name = "foreign/tl_h100_timesformer"
    slices = [e for e in raw.complete(name, "cpu_op") if e["name"] == "aten::slice"
              and e.get("args", {}).get("Input Dims", [[0]])[0] == [1, 25089, 768]]
    whole = [e for e in slices if e["args"].get("Concrete Inputs") == ["", "0", "0", str(2**63 - 1), "1"]]
    assert len(whole) >= 12 and len({json.dumps(e["args"]["Concrete Inputs"]) for e in whole}) == 1
    f = _finding(analysis_of, name)
    assert f is None or f.record.kind != "sample"
    # the per-sample loops keep their reading: their select index counts
    assert _finding(analysis_of, SAVINGS + "loop_per_sample_loss__broken").record.kind == "sample"


def test_a_loop_over_rows_whose_passes_differ_is_a_loop_per_sample(analysis_of):
    """`for img in batch:` with a random flip in about half the passes (loop_per_sample_augment): the passes are
    not one repeated block, but each takes one row of the unbound batch, after the same prefix of ops."""
    name = SAVINGS + "loop_per_sample_augment__broken"
    f = _finding(analysis_of, name)
    assert f is not None and f.record.kind == "sample"
    step = _outer_names(name)[1]
    flips = step.count("aten::flip")
    # every row is cropped (two slices a pass) and some are flipped: the passes differ
    assert step.count("aten::slice") == 2 * f.record.passes == 2 * 128 and 0 < flips < 128
    assert "aten::flip" in f.record.block and f.severity.value == "critical"
    assert f.edit is not None and f.edit.remove.size  # the other passes' ops go in the replay (test_savings)
    assert _finding(analysis_of, SAVINGS + "loop_per_sample_augment__fixed") is None


def test_a_loop_over_the_pieces_of_a_split_tensor(analysis_of):
    """GPUPuzzlers' fusion puzzle (review 6): torch.split into 16 features, a parameter-free LayerNorm and tanh on
    each, the results stacked: one call on the unsplit tensor does it; there is no model to vmap."""
    name = "foreign/gp_fusion_mwe"
    ops = sorted((e for e in raw.complete(name, "cpu_op")), key=lambda e: float(e["ts"]))
    splits = [e for e in ops if e["name"] == "aten::split"]
    norms = [e for e in ops if e["name"] == "aten::layer_norm"]
    assert splits and len(norms) >= 16
    finding = analysis_of(name).finding("python-loop")
    assert finding is not None and finding.metrics["kind"] == "slices"
    assert "unsplit" in finding.fix_here and "stack_module_state" not in finding.fix_here


def test_a_loop_that_reads_one_element_back_per_pass():
    """GPUPuzzlers' d2h_sync puzzle (fetched: remote.json): a tensor summed one `.cpu()` at a time (4-byte pageable
    read-backs, each a round trip): python-loop says reduce on the GPU, and pageable-memcpy, whose pinned copy would
    not shorten a 4-byte read-back, stays silent."""
    import os
    from pathlib import Path

    cache = Path(os.environ.get("PISTA_FOREIGN_CACHE") or Path.home() / ".cache" / "pista" / "foreign")
    path = cache / "gp_d2h_sync_final.json.gz"
    if not path.exists():
        pytest.skip("gp_d2h_sync_final is fetched (scripts/fetch_foreign.py), not committed")
    events = raw.events(str(path))
    dtoh = [e for e in events if str(e.get("name", "")).startswith("Memcpy DtoH")]
    assert sum(e["args"]["bytes"] <= 8 for e in dtoh) > 4000  # and third_sum's one 16 KiB copy of the whole tensor
    analysis = analyze(str(path))
    assert "pageable-memcpy" not in analysis.rules_fired
    loop = next(f for f in analysis.findings if f.rule == "python-loop")
    assert loop.metrics["reads_back"] and "x.sum().item()" in loop.fix_here
