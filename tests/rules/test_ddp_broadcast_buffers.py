"""ddp-broadcast-buffers on real traces: HTA's hta_nccl_data (ResNet-50 under DDP, whose every forward re-broadcasts
159 BatchNorm buffers with the GPU idle), and the DDP traces where the same sync costs nothing the GPU waits for."""

from __future__ import annotations

import gzip
import json

import pytest
import raw
from conftest import fixture

from pista.analysis import analyze
from pista.rules.ddp_broadcast_buffers import ID

NCCL_DATA = "foreign/hta_nccl_data"


def _syncs(name: str) -> list[tuple[float, float, int, int]]:
    """From the raw JSON, per outermost DistributedDataParallel.forward in a step: from its first
    flatten_dense_tensors to the end of the last copy_ before its first conv2d (µs), its copies, its broadcasts."""
    ops = sorted(raw.complete(name, "cpu_op"), key=lambda e: float(e["ts"]))
    steps = raw.steps(name)
    out = []
    for fw in raw.complete(name, "user_annotation", "DistributedDataParallel.forward"):
        if not any(raw.inside(s, fw) for s in steps):
            continue
        mine = [e for e in ops if raw.inside(fw, e)]
        conv = min((float(e["ts"]) for e in mine if e["name"] == "aten::conv2d"), default=None)
        flat = [float(e["ts"]) for e in mine if e["name"] == "aten::flatten_dense_tensors"]
        if conv is None or not flat:
            continue
        before = [e for e in mine if float(e["ts"]) < conv]
        copies = [e for e in before if e["name"] == "aten::copy_"]
        end = max(float(e["ts"]) + float(e["dur"]) for e in copies)
        out.append((min(flat), end, len(copies), sum(e["name"] == "c10d::broadcast_" for e in before)))
    return out


def _busy_us(name: str, lo: float, hi: float) -> float:
    return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in raw.busy_intervals(name))


def test_the_buffer_broadcast_before_every_forward_is_named():
    """hta_nccl_data: each forward spends ~37 ms flattening, broadcasting, unflattening and copying back 159
    BatchNorm buffers before its first conv2d, with the GPU idle: 17% of the step, which only overhead-bound's op
    list showed. The model trains BatchNorm, so broadcast_buffers=False is advised only under its condition."""
    syncs = _syncs(NCCL_DATA)
    steps = len(raw.steps(NCCL_DATA))
    assert len(syncs) == steps
    idle = sum((b - a) - _busy_us(NCCL_DATA, a, b) for a, b, _, _ in syncs) / steps
    f = analyze(fixture(NCCL_DATA), rules=[ID], replay=False).finding(ID)
    assert f is not None
    assert f.record.copies_per_call == syncs[0][2] == 159 and f.record.broadcasts_per_call == syncs[0][3] == 2
    assert f.record.sync_us == pytest.approx(sum(b - a for a, b, _, _ in syncs) / steps, rel=0.02)
    assert f.record.idle_us == pytest.approx(idle, rel=0.02) and f.impact.share > 0.1
    assert f.record.batch_norm and not f.record.sync_batch_norm
    assert "SyncBatchNorm" in f.advice and "may differ" in f.fix
    replayed = analyze(fixture(NCCL_DATA)).finding(ID)
    assert replayed.impact.replayed and 0 < replayed.impact.us <= f.impact.us * 1.05
    ob = analyze(fixture(NCCL_DATA)).finding("overhead-bound")
    assert ob is None or "aten::unflatten_dense_tensors" not in {o.name for o in ob.record.top_ops}
    f.lang = "es"
    assert "SyncBatchNorm" in f.advice and "broadcast_buffers=False" in f.fix


def test_without_batch_norm_the_advice_is_plain(tmp_path):
    """The same trace with its BatchNorm ops renamed (a model with no buffer the forward updates): the broadcast
    re-sends values every rank has, and broadcast_buffers=False is advised without a condition."""
    with gzip.open(fixture(NCCL_DATA), "rt") as f:
        data = json.load(f)
    for e in data["traceEvents"]:
        if e.get("name") in ("aten::batch_norm", "aten::_batch_norm_impl_index", "aten::cudnn_batch_norm"):
            e["name"] = "aten::layer_norm"
    path = tmp_path / "no_bn.json.gz"
    with gzip.open(path, "wt") as out:
        json.dump(data, out)
    f = analyze(str(path), rules=[ID], replay=False).finding(ID)
    assert f is not None and not f.record.batch_norm
    assert "may differ" not in f.fix and "SyncBatchNorm" not in f.advice


@pytest.mark.parametrize(("name", "syncs"), [("foreign/hta_ns_resolution", True), ("foreign/tl_mi300_resnet_ckpt", True),
                                           ("foreign/hta_negq_rank0", False), ("foreign/hta_sampled_rank0", False)])
def test_a_sync_the_gpu_does_not_wait_for_is_quiet(name, syncs):
    """The twins: hta_ns_resolution's and tl_mi300_resnet_ckpt's DDP forwards broadcast their buffers too, but behind
    a busy GPU or in about a millisecond of a step (under the rule's 2%); TorchRec's DDP forwards broadcast none."""
    found = _syncs(name)
    assert bool(found) == syncs
    steps = len(raw.steps(name))
    idle = sum((b - a) - _busy_us(name, a, b) for a, b, _, _ in found) / steps
    assert idle < 0.02 * raw.median_step_us(name)
    assert analyze(fixture(name), rules=[ID]).finding(ID) is None
