"""channels-last on the H200 layout twins (tests/fixtures/gpu/README.md: the same training step in NCHW
and channels_last, and its unprofiled step times)."""

from __future__ import annotations

import re

import pytest
import raw

from pista.i18n import localize_finding

RULE = "channels-last"
# what the twins' channels_last run keeps of each NCHW kernel kind's time (the rule's docstring)
TRANSPOSE = re.compile(r"nchwToNhwcKernel|nhwcToNchwKernel")
BATCH_NORM = re.compile(r"at::native::batch_norm_(backward|collect_statistics|transform_input)_kernel<"
                        r"|bn_fw_tr_1C11_kernel_NCHW|bn_bw_1C11_(kernel_new|singleread)|bn_fw_tr_1C11_singleread")
POOL = re.compile(r"pool\w*_nchw")
DEPTHWISE = re.compile(r"conv_depthwise2d_")
KEEP = ((TRANSPOSE, 0.0), (BATCH_NORM, 0.44), (DEPTHWISE, 0.30), (POOL, 0.86))
# unprofiled median steps in ms (the README), NCHW and channels_last
UNPROFILED = {"r50_bf16": (31.50, 24.76), "r50_fp32": (32.97, 26.23), "mb_bf16": (52.06, 33.39)}


def _kernels(name: str) -> list[dict]:
    """The kernels launched inside the steps (by their launch call's correlation id)."""
    launches = {c["args"]["correlation"] for c in raw.in_steps(name, raw.complete(name))
                if c.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in c.get("args", {})}
    return [k for k in raw.complete(name, "kernel") if k.get("args", {}).get("correlation") in launches]


def _busy_share(name: str) -> float:
    steps = raw.steps(name)
    lo, hi = float(steps[0]["ts"]), float(steps[-1]["ts"]) + float(steps[-1]["dur"])
    return raw.total(raw.intersect(raw.busy_intervals(name), [(lo, hi)])) / (hi - lo)


def _gpu_saved(name: str) -> float:
    """µs per step channels_last would not spend, by the twins' ratios."""
    total = 0.0
    for k in _kernels(name):
        for pattern, keep in KEEP:
            if pattern.search(k["name"]):
                total += float(k["dur"]) * (1 - keep)
                break
    return total / len(raw.steps(name))


@pytest.mark.parametrize("name", ["gpu/layout_r50_nchw_bf16", "gpu/layout_r50_nchw_fp32", "gpu/layout_mb_nchw_bf16"])
def test_impact_is_the_nchw_path_s_gpu_time_scaled_by_the_busy_share(analysis_of, name):
    finding = analysis_of(name).finding(RULE)
    assert finding is not None
    transposes = [k for k in _kernels(name) if TRANSPOSE.search(k["name"])]
    group = next(g for g in finding.record.kinds if g.kind == "transpose")
    assert group.us_per_step == pytest.approx(sum(float(k["dur"]) for k in transposes) / len(raw.steps(name)))
    assert finding.record.gpu_saved_us == pytest.approx(_gpu_saved(name), rel=1e-6)
    # the busy share of the profiled window: the rule's is the summary's, over the whole window
    assert finding.impact.us == pytest.approx(_gpu_saved(name) * _busy_share(name), rel=0.03)
    assert "torch.channels_last" in finding.fix
    assert {e.name for e in finding.evidence} & {k["name"] for k in transposes}


@pytest.mark.parametrize("nchw, cl", [("gpu/layout_r50_nchw_bf16", "gpu/layout_r50_cl_bf16"),
                                      ("gpu/layout_mb_nchw_bf16", "gpu/layout_mb_cl_bf16")])
def test_the_gpu_time_saved_is_what_the_twin_saves_or_less(analysis_of, nchw, cl):
    def gpu_per_step(name):
        return sum(float(e["dur"]) for e in raw.in_steps(name, raw.device_work(name))) / len(raw.steps(name))

    measured = gpu_per_step(nchw) - gpu_per_step(cl)
    predicted = analysis_of(nchw).finding(RULE).record.gpu_saved_us
    assert 0.75 * measured <= predicted <= measured  # r50: 11.5 of 12.3 ms; MobileNetV3: 26.4 of 33.6
    assert analysis_of(cl).finding(RULE) is None


@pytest.mark.parametrize("name, key", [("gpu/layout_r50_nchw_bf16", "r50_bf16"), ("gpu/layout_r50_nchw_fp32", "r50_fp32"),
                                       ("gpu/layout_mb_nchw_bf16", "mb_bf16")])
def test_the_impact_is_near_the_unprofiled_saving(analysis_of, name, key):
    nchw, cl = UNPROFILED[key]
    impact = analysis_of(name).finding(RULE).impact.us / 1000
    assert 0.8 * (nchw - cl) <= impact <= 1.3 * (nchw - cl)  # 6.6 vs 6.7, 7.7 vs 6.7, 23.1 vs 18.7 ms


def test_resnet_fp32_behind_a_slow_loader_is_information(analysis_of):
    # gpu/resnet_loader: the same NCHW path, but the GPU is 23% busy behind the DataLoader
    finding = analysis_of("gpu/resnet_loader").finding(RULE)
    assert finding is not None and finding.severity.value == "info"
    assert finding.impact.us < 0.05 * analysis_of("gpu/resnet_loader").finding("gpu-idle").impact.us
    pool = next(g for g in finding.record.kinds if g.kind == "pooling")
    assert pool.kernel.startswith("at::native::max_pool")  # not cut at "(anonymous namespace)"


@pytest.mark.parametrize("name", ["gpu/multiscale_plain", "gpu/multiscale_benchmark", "gpu/resnet50_bf16",
                                  "gpu/gpt2_conv1d", "series_mlp_eager", "gpu/cpu_only"])
def test_silent_in_channels_last_and_without_convolutions(analysis_of, name):
    # multiscale_*: a channels_last ResNet-18 fed NCHW inputs converts once per step (20 µs)
    assert analysis_of(name).finding(RULE) is None


def test_spanish_names_the_change(analysis_of):
    finding = localize_finding(analysis_of("gpu/layout_r50_nchw_bf16").finding(RULE), "es")
    assert "channels_last" in finding.fix and "transposiciones" in finding.message


@pytest.mark.parametrize("name", ["foreign/hta_ns_resolution", "foreign/kineto_resnet50_w0_2021"])
def test_fp32_convolutions_on_the_cuda_cores_get_precision_first(analysis_of, name):
    """V100 ResNet-50s in fp32: cuDNN's convolutions are SIMT kernels (volta_scudnn, volta_sgemm), no tensor
    cores; the NHWC gain is a tensor-core gain (on kineto_resnet50_w0_2021 the replay of channels_last saved
    -1.19 ms). Silent there; mixed precision (fp32-gemm) is the change to make first."""
    kernels = [e for e in raw.complete(name) if str(e.get("cat", "")).lower() == "kernel"]  # torch 1.8: "Kernel"
    convs = [e for e in kernels if re.search(r"conv|scudnn|sgemm", e["name"])]
    simt = [e for e in convs if re.search(r"scudnn|sgemm", e["name"])]
    assert sum(float(e["dur"]) for e in simt) > 0.5 * sum(float(e["dur"]) for e in convs)
    assert analysis_of(name).finding("channels-last") is None
    assert analysis_of(name).finding("fp32-gemm") is not None


def test_cudnn_9_s_convert_tensor_kernels_are_the_nchw_transposes(tmp_path):
    """Issue 34: cuDNN 9 names its layout conversions `cudnn::engines_precompiled::convertTensor_kernel` (17-18% of
    the GPU time on two RTX 4090 traces, unseen). savings/h100/cl_conv_fp16's NCHW twin with its nchwToNhwc /
    nhwcToNchw kernels renamed so: the same transposes are read, for the same GPU time."""
    import gzip
    import json

    from conftest import fixture

    from pista.analysis import analyze

    source = fixture("savings/h100/cl_conv_fp16__broken")
    with gzip.open(source, "rt") as f:
        data = json.load(f)
    renamed = 0
    for e in data["traceEvents"]:
        if e.get("cat") == "kernel" and re.search(r"nchwToNhwcKernel|nhwcToNchwKernel", e.get("name", "")):
            e["name"] = "void cudnn::engines_precompiled::convertTensor_kernel<__half, __half, float, 4>(float, float)"
            renamed += 1
    path = tmp_path / "convert.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(data, f)

    def transposes(p):
        f = next(f for f in analyze(str(p), replay=False).findings if f.rule == "channels-last")
        return next(k for k in f.record.kinds if k.kind == "transpose")

    before, after = transposes(source), transposes(path)
    assert renamed > 0 and "convertTensor_kernel" in after.kernel
    assert after.us_per_step == pytest.approx(before.us_per_step) and after.per_step == before.per_step
