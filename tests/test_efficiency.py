"""pista.efficiency: FLOPs of GEMMs from the recorded shapes, the card's peaks and ceilings, and the
achieved rate of real H200 GEMMs, each checked against a figure computed here from the raw events."""

from __future__ import annotations

import math

import numpy as np
import pytest
import raw
from conftest import FIXTURES

from pista import efficiency
from pista.efficiency import (
    CARDS,
    card_named,
    card_of,
    gemm_dtype,
    gemm_flops,
    gemm_mnk,
    gemms,
    headroom_ns,
    rate,
)

GEMM_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear"}


def _raw_gemm_rate(name: str, kernel_prefix: str) -> float:
    """TFLOP/s of the kernels named kernel_prefix*, from the raw events: each kernel's External id
    leads to the cpu_op that launched it, whose Input Dims give 2*M*N*K."""
    ops = {e["args"]["External id"]: e for e in raw.complete(name, "cpu_op") if "External id" in e.get("args", {})}
    flops = dur = 0.0
    for k in raw.complete(name, "kernel"):
        if not k["name"].startswith(kernel_prefix):
            continue
        op = ops[k["args"]["External id"]]
        dims = op["args"]["Input Dims"]
        a, b = (dims[1], dims[2]) if op["name"] == "aten::addmm" else (dims[0], dims[1])
        flops += 2.0 * a[0] * a[1] * b[1]
        dur += float(k["dur"])  # µs
    return flops / dur / 1e6


def _kernels(facts, prefix: str) -> np.ndarray:
    trace = facts.trace
    return np.flatnonzero(facts.is_device_work & np.char.startswith(trace.name_array[trace.name].astype(str), prefix))


def test_the_warm_4096_bf16_gemm_runs_at_803_tflops(load_facts):
    facts = load_facts("seed_mm4096_warm")
    kernels = _kernels(facts, "nvjet_")
    r = rate(facts, kernels)
    expected = _raw_gemm_rate("seed_mm4096_warm", "nvjet_")
    assert r.tflops == pytest.approx(expected, rel=1e-6)
    # REVIEW.md: 2*4096^3 FLOP in 171.2 µs = 803 TFLOP/s, 81% of the H200's 989 dense bf16
    assert r.tflops == pytest.approx(2 * 4096**3 / 171.2e-6 / 1e12, rel=0.05)
    assert r.dtype == "bf16" and r.card == "H200 SXM" and r.calls == r.rated_calls == 3
    assert r.flops == 3 * 2 * 4096**3
    assert r.peak_tflops == 989.0 and r.peak_share == pytest.approx(expected / 989.0)
    assert r.ceiling_tflops == 756.7 and r.ceiling_measured and r.ceiling_share > 1.0
    # at the ceiling: nothing to gain
    assert headroom_ns(facts, kernels) == 0.0


def test_a_4096_fp32_gemm_without_tf32_runs_near_51_tflops(load_facts):
    facts = load_facts("gpu/fp32_gemm")
    kernels = _kernels(facts, "sm80_xmma_gemm_f32f32")
    r = rate(facts, kernels)
    assert r.tflops == pytest.approx(_raw_gemm_rate("gpu/fp32_gemm", "sm80_xmma_gemm_f32f32"), rel=1e-6)
    assert r.tflops == pytest.approx(50.9, rel=0.05)  # the H200's measured fp32 ceiling
    assert r.dtype == "fp32" and r.peak_tflops == 67.0


def test_fp32_inputs_on_a_tf32_kernel_count_as_tf32(load_facts):
    facts = load_facts("gpu/tf32_gemm")
    kernels = _kernels(facts, "sm90_xmma_gemm_f32f32_tf32f32")
    r = rate(facts, kernels)
    assert r.dtype == "tf32" and r.peak_tflops == 494.0
    assert r.tflops == pytest.approx(_raw_gemm_rate("gpu/tf32_gemm", "sm90_xmma_gemm_f32f32_tf32f32"), rel=1e-6)


def test_flops_go_to_the_gemm_kernel_not_to_the_memset_beside_it(load_facts):
    facts = load_facts("seed_mm4096_warm")
    table = gemms(facts)
    trace = facts.trace
    assert {trace.event_name(k) for k in table} == {"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"}
    assert all(g.mnk == (1, 4096, 4096, 4096) and trace.event_name(g.op) == "aten::mm" for g in table.values())


def test_kernel_rows_carry_flops_tflops_and_peak_share(load_facts):
    rows = efficiency.kernel_rows(load_facts("seed_mm4096_warm"))
    gemm, add = rows[0], rows[1]
    assert gemm.name.startswith("nvjet_") and gemm.calls == 3 and gemm.flops == 3 * 2 * 4096**3
    assert gemm.peak_share == pytest.approx(gemm.tflops / 989.0)
    # the bias add is no GEMM: rated by the bytes it moves (two 4096² bf16 tensors and the bias)
    assert add.flops is None and add.tflops is None and add.bound == "memory"
    assert add.bytes == 3 * (2 * 4096 * 4096 * 2 + 4096 * 2)


def test_cards_by_their_device_names():
    names = {
        "NVIDIA H200": "H200 SXM", "NVIDIA H200 NVL": "H200 NVL", "NVIDIA H100 80GB HBM3": "H100 SXM",
        "NVIDIA H100 PCIe": "H100 PCIe", "NVIDIA H100 NVL": "H100 NVL", "NVIDIA B200": "B200",
        "NVIDIA A100-SXM4-80GB": "A100 SXM 80GB", "NVIDIA A100-SXM4-40GB": "A100 40GB",
        "NVIDIA A100 80GB PCIe": "A100 80GB PCIe", "NVIDIA L4": "L4", "Tesla V100-SXM2-16GB": "V100 SXM2",
        "Tesla V100-PCIE-32GB": "V100 PCIe", "Tesla V100S-PCIE-32GB": "V100S PCIe", "Tesla T4": "T4",
        "Tesla P100-PCIE-16GB": "P100", "AMD Instinct MI300X": "MI300X", "AMD Instinct MI325X": "MI325X",
        "AMD Instinct MI350X": "MI350X", "AMD Instinct MI355X": "MI355X", "AMD Instinct MI250X": "MI250X",
        "AMD Instinct MI250X / MI250": "MI250X",
    }
    for device, card in names.items():
        assert card_named(device).name == card, device
    assert card_named("NVIDIA GeForce GTX 1080") is None


def test_a100_boards_by_name_and_by_properties(tmp_path):
    """Meta's A100 boards: 'NVIDIA A100-PG509-200' (HTA's traces: 42 GB, the 40 GB card) by its name; a
    board name the table lacks ('PG509-210') by the header's compute 8.0 and 108 SMs, its memory
    choosing 40 or 80 GB."""
    import gzip
    import json

    from pista.efficiency import card_of
    from pista.trace.load import load_trace

    path = FIXTURES / "foreign" / "hta_event_sync_ms.json.gz"
    data = json.loads(gzip.decompress(path.read_bytes()))
    props = data["deviceProperties"][0]
    assert props["name"] == "NVIDIA A100-PG509-200" and props["numSms"] == 108
    assert card_of(load_trace(path)).name == "A100 40GB"
    for memory, card in ((props["totalGlobalMem"], "A100 40GB"), (85_899_345_920, "A100 SXM 80GB")):
        for p in data["deviceProperties"]:
            p["name"], p["totalGlobalMem"] = "NVIDIA PG509-210", memory
        copy = tmp_path / "pg509.json"
        copy.write_text(json.dumps(data))
        assert card_of(load_trace(copy)).name == card
    for p in data["deviceProperties"]:
        p["name"], p["numSms"] = "NVIDIA A30", 56
    copy.write_text(json.dumps(data))
    assert card_of(load_trace(copy)) is None  # sm_80 with 56 SMs: not an A100


def test_geforce_tf32_runs_at_the_fp32_rate():
    from pista.efficiency import tf32_gains

    for device in ("NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 3080",
                   "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4080"):
        card = card_named(device)
        assert card.tflops["tf32"] == card.tflops["fp32"] and not tf32_gains(card), device
        assert card.tflops["bf16"] == pytest.approx(2 * card.tflops["fp32"], rel=0.01), device
    assert tf32_gains(card_named("NVIDIA A100-SXM4-80GB")) and tf32_gains(card_named("NVIDIA H200"))
    # the Ti is the full GA102, not the RTX 3090 its name holds (review 6: triton_kernels_gpu)
    ti, plain = card_named("NVIDIA GeForce RTX 3090 Ti"), card_named("NVIDIA GeForce RTX 3090")
    assert ti.name == "RTX 3090 Ti" and ti.tflops["fp32"] > plain.tflops["fp32"]


def test_every_card_has_the_dtypes_its_architecture_has():
    for card in CARDS:
        assert card.source and card.hbm_tbps > 0
        assert {"fp32", "fp64", "fp16"} <= set(card.tflops), card.name
        if card.source.startswith("AMD"):
            # matrix cores with bf16 on every Instinct in the table; a TF32 unit only on CDNA 3 (MI300X, MI325X):
            # CDNA 2 had none, CDNA 4 (MI350X, MI355X) emulates it in bf16
            assert "bf16" in card.tflops, card.name
            assert card.has_tf32 == card.name.startswith(("MI300", "MI325")), card.name
            continue
        assert card.has_tf32 == (card.compute_major >= 8), card.name  # TF32 came with Ampere
        assert ("bf16" in card.tflops) == (card.compute_major >= 8), card.name
        # dense peaks, tensor cores above the CUDA cores where there are any
        assert card.tflops["fp16"] >= card.tflops["fp32"], card.name


def test_ceilings_are_measured_on_the_h200_and_estimated_elsewhere():
    h200, h100 = card_named("NVIDIA H200"), card_named("NVIDIA H100 80GB HBM3")
    assert h200.ceiling("bf16") == 756.7 and h200.ceiling_measured("bf16")
    assert h200.ceiling("fp32") == 50.9 and h200.ceiling("tf32") == 355.2
    # the H100 SXM has the H200's compute: the same share of its datasheet
    assert h100.ceiling("bf16") == pytest.approx(989.5 * 756.7 / 989.0)
    assert not h100.ceiling_measured("bf16")
    assert card_named("Tesla V100-SXM2-16GB").ceiling("tf32") is None  # no TF32 on Volta
    assert h200.hbm_ceiling_tbps == 4.27 and h100.hbm_ceiling_tbps == pytest.approx(3.35 * 4.27 / 4.8)


def test_the_card_comes_from_the_trace_header(load_facts):
    assert card_of(load_facts("seed_mm4096_warm").trace).name == "H200 SXM"
    assert card_of(load_facts("gpu/cpu_only").trace) is None


@pytest.mark.parametrize(("op", "dims", "mnk"), [
    ("aten::mm", [[64, 32], [32, 16]], (1, 64, 16, 32)),
    ("aten::mm", [[8192, 8192], [8192, 8192], [8192, 8192]], (1, 8192, 8192, 8192)),  # mm.out
    ("aten::addmm", [[4096], [4096, 1024], [1024, 4096], [], []], (1, 4096, 4096, 1024)),  # bias first
    ("aten::bmm", [[12, 512, 64], [12, 64, 512]], (12, 512, 512, 64)),
    ("aten::baddbmm", [[12, 512, 512], [12, 512, 64], [12, 64, 512], [], []], (12, 512, 512, 64)),
    ("aten::linear", [[8, 512, 768], [3072, 768], [3072]], (1, 4096, 3072, 768)),
    ("aten::matmul", [[4, 1, 32, 16], [3, 16, 8]], (12, 32, 8, 16)),  # broadcast batch
    ("aten::matmul", [[16], [16, 8]], (1, 1, 8, 16)),
    ("aten::_scaled_mm", [[4096, 4096], [4096, 4096], [], [], [], []], (1, 4096, 4096, 4096)),
])
def test_gemm_shapes(op, dims, mnk):
    assert gemm_mnk(op, dims) == mnk
    assert gemm_flops(op, dims) == 2.0 * math.prod(mnk)


@pytest.mark.parametrize(("op", "dims"), [
    ("aten::mm", [[64, 32], [33, 16]]),  # K does not match
    ("aten::mm", [[64, 32]]),
    ("aten::bmm", [[2, 4, 8], [3, 8, 4]]),
    ("aten::add", [[4, 4], [4, 4]]),
    ("aten::mm", None),
])
def test_no_flops_where_the_shapes_do_not_fit(op, dims):
    assert gemm_flops(op, dims) is None


def test_dtypes_from_the_recorded_types():
    assert gemm_dtype("aten::mm", ["c10::BFloat16", "c10::BFloat16"], "nvjet_sm90_tst") == "bf16"
    assert gemm_dtype("aten::addmm", ["float", "c10::Half", "c10::Half", "Scalar"], "x") == "fp16"
    assert gemm_dtype("aten::mm", ["float", "float"], "sm80_xmma_gemm_f32f32_f32f32_f32_ffma") == "fp32"
    assert gemm_dtype("aten::mm", ["float", "float"], "sm90_xmma_gemm_f32f32_tf32f32_f32") == "tf32"
    assert gemm_dtype("aten::mm", ["double", "double"], "x") == "fp64"
    assert gemm_dtype("aten::_scaled_mm", ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn"], "x") == "fp8"
    assert gemm_dtype("aten::mm", None, "x") is None


def test_kernels_list_rates_the_big_kernels(capsys):
    """JSON `kernels`: the seed's GEMM near 803 TFLOP/s, a streaming fp32 kernel near the H200's
    ~4.2 TB/s, from figures computed here from the raw events."""
    import json

    import raw
    from conftest import fixture

    from pista.cli import main

    assert main(["analyze", str(fixture("gpu/stream_fp32")), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["kernels"]
    top = rows[0]
    assert top["purpose"] == "elementwise" and top["bound"] == "memory"
    kernels = [k for k in raw.complete("gpu/stream_fp32", "kernel") if k["name"] == top["name"]]
    moved = 2 * 256 * 1024 * 1024 * 4  # x.mul(2.0) on 256 Mi floats: read 1 GiB, write 1 GiB
    expected = moved * len(kernels) / sum(float(k["dur"]) for k in kernels) / 1e6  # TB/s
    assert abs(top["tbps"] - expected) <= 0.01 * expected and 3.9 <= top["tbps"] <= 4.6
    assert top["bytes"] == moved * len(kernels)

    assert main(["analyze", str(fixture("seed_mm4096_warm")), "--format", "json"]) == 0
    gemm = json.loads(capsys.readouterr().out)["kernels"][0]
    assert gemm["purpose"] == "gemm" and gemm["bound"] == "compute"
    calls = [k for k in raw.complete("seed_mm4096_warm", "kernel") if k["name"] == gemm["name"]]
    tflops = 2 * 4096 ** 3 * len(calls) / sum(float(k["dur"]) for k in calls) / 1e6
    assert abs(gemm["tflops"] - tflops) <= 0.01 * tflops and abs(gemm["tflops"] - 803) <= 0.05 * 803
    assert abs(gemm["peak_share"] - tflops / 989) <= 0.01


def test_a_peaks_file_replaces_the_table_for_one_command(tmp_path, capsys):
    """--peaks FILE: a card of the user's own; the seed's GEMM against a 1300 TFLOP/s bf16 ceiling (at about 58% of
    it, under dominant-event's NEAR_PEAK_SHARE) could save its time minus 2*4096^3 FLOP at 1300 TFLOP/s per call."""
    import json

    import raw
    from conftest import fixture

    from pista.cli import main

    peaks = tmp_path / "peaks.json"
    peaks.write_text(json.dumps({"name": "mine", "tflops": {"bf16": 1500, "fp32": 80}, "hbm_tbps": 5.0,
                                 "measured": {"bf16": 1300}}))
    assert main(["analyze", str(fixture("seed_mm4096_warm")), "--format", "json", "--peaks", str(peaks)]) == 0
    data = json.loads(capsys.readouterr().out)
    gemm = data["kernels"][0]
    assert abs(gemm["peak_share"] - gemm["tflops"] / 1500) < 1e-9
    calls = [float(k["dur"]) for k in raw.complete("seed_mm4096_warm", "kernel") if k["name"] == gemm["name"]]
    ideal = 2 * 4096**3 / 1300e12 * 1e6
    dominant = next(f for f in data["findings"] if f["rule"] == "dominant-event")
    assert abs(dominant["impact"]["us"] - sum(d - ideal for d in calls) / len(raw.steps("seed_mm4096_warm"))) < 0.01
    # the next command is back on the built-in table (the H200's measured 756.7: at the ceiling)
    assert main(["analyze", str(fixture("seed_mm4096_warm")), "--format", "json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert abs(again["kernels"][0]["peak_share"] - gemm["tflops"] / 989) < 1e-3
    bad = tmp_path / "bad.json"
    bad.write_text('{"tflops": 3}')
    assert main(["analyze", str(fixture("seed_mm4096_warm")), "--peaks", str(bad)]) == 2
    assert "not a peaks file" in capsys.readouterr().err


def test_a_tie_between_dtypes_rates_at_the_first_one_whatever_the_hash_seed(tmp_path):
    """Two of the warm 4096 GEMM's calls in fp16 and bf16, the third without types: the group's dtype
    is a tie, settled by the first call's, not by the order of a set of strings (which moves with
    PYTHONHASHSEED, so two runs on one trace could rate the same kernel against two peaks)."""
    import gzip
    import json
    import os
    import subprocess
    import sys

    from conftest import fixture

    doc = json.loads(gzip.decompress(fixture("seed_mm4096_warm").read_bytes()))
    mm = [e for e in doc["traceEvents"] if e.get("name") == "aten::mm"]
    mm[0]["args"]["Input type"] = ["c10::Half", "c10::Half"]
    del mm[2]["args"]["Input type"]
    path = tmp_path / "tie.json"
    path.write_text(json.dumps(doc))

    def gemm_dtype(seed: int) -> str:
        out = subprocess.run([sys.executable, "-m", "pista", "analyze", str(path), "--format", "json"],
                             capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
        return next(k["dtype"] for k in json.loads(out)["kernels"] if k["purpose"] == "gemm")

    assert {gemm_dtype(seed) for seed in range(6)} == {"fp16"}


def test_a_normalisation_writes_an_output_the_size_of_its_input(load_facts):
    # gpu/resnet50_nograd (eval): each aten::native_batch_norm reads x and four (C,) vectors and writes
    # y like x; its kernels count as reductions, yet the bytes are read plus write, not the read alone
    name = "gpu/resnet50_nograd"
    facts = load_facts(name)
    moved = efficiency.memory_bytes(facts)
    trace = facts.trace
    norm = {int(i) for i in np.flatnonzero(trace.name == trace.names.index("aten::native_batch_norm"))}
    counted = sum(b for k, b in moved.items() if int(facts.owner[k]) in norm)
    expected = 0.0
    for op in raw.complete(name, "cpu_op", "aten::native_batch_norm"):
        sizes = [math.prod(d) * efficiency.ELEMENT_BYTES[t] for d, t in
                 zip(op["args"]["Input Dims"], op["args"]["Input type"], strict=True) if d and t in efficiency.ELEMENT_BYTES]
        expected += sum(sizes) + max(sizes)
    assert counted == pytest.approx(expected, rel=1e-6)
