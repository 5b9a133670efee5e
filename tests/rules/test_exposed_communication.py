"""exposed-communication on the real gloo traces (tests/fixtures/gloo/README.md says how they were made)."""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path

import msgspec
import pytest
from conftest import FIXTURES, H200_TRACES

from pista.analysis import analyze
from pista.distributed import analyze_ranks
from pista.i18n import localize_finding
from pista.rules.exposed_communication import ID, MIN_EXPOSED_SHARE, ExposedCall, WaitingCall

GLOO = FIXTURES / "gloo"
SLEEP_MS = 30.0


def _finding(name: str, rank: int):
    return analyze(GLOO / name / f"rank-{rank}.json.gz", rules=[ID]).finding(ID)


def test_fires_on_the_rank_that_waits_for_a_slow_peer():
    # straggler_2: rank 1 sleeps 30 ms per step, rank 0 waits it out inside gloo:all_reduce
    finding = _finding("straggler_2", 0)
    assert finding is not None
    r = finding.record
    assert r.domain == "host" and r.collective == "gloo:all_reduce" and r.late_peer is None
    assert r.exposed_us > 0.6 * SLEEP_MS * 1000
    assert finding.impact.share > 0.5 and finding.severity.value == "critical"
    assert 0.0 <= r.overlap_share < 0.5
    assert r.collectives == 20 and r.steps == 5  # 4 buckets x 5 profiled steps
    assert finding.evidence and all(e.name == "gloo:all_reduce" for e in finding.evidence)
    assert all("pt_gloo_runloop" in e.lane or "thread" in e.lane for e in finding.evidence)
    notes = [e.detail for e in finding.evidence]
    assert all(isinstance(n, ExposedCall) and 0 < n.exposed_us <= n.dur_us + 1e-6 for n in notes)
    assert [n.exposed_us for n in notes] == sorted((n.exposed_us for n in notes), reverse=True)
    assert "no compute beside it" in finding.message
    assert "gloo:all_reduce" in finding.fix and "no_sync()" in finding.fix


def test_silent_on_the_slow_rank_it_is_the_one_everyone_waits_for():
    # the slowed rank arrives last at every all-reduce, so they complete soon after it joins
    assert _finding("straggler_2", 1) is None


@pytest.mark.parametrize("name", ["balanced_2", "balanced_4"])
def test_fires_where_gloo_on_two_shared_cores_is_slower_than_the_backward_it_overlaps(name):
    # 0.25 MB buckets over loopback gloo on a 2-core box: each all-reduce outlasts the layer's backward
    finding = _finding(name, 0)
    assert finding is not None and finding.impact.share >= MIN_EXPOSED_SHARE


@pytest.mark.parametrize("name", H200_TRACES)
def test_silent_without_collectives(analysis_of, name):
    # single-GPU H200 captures: no NCCL kernel, no gloo, nothing to expose
    assert ID not in analysis_of(name).rules_fired


def test_silent_on_a_healthy_ddp_job_whose_all_reduces_cost_nothing():
    # tests/fixtures/nccl/world_1: a real DDP job on one H200; NCCL launches no kernel for one rank
    assert analyze(FIXTURES / "nccl" / "world_1" / "rank-0.json.gz").finding(ID) is None


# --- impact, from the raw events -------------------------------------------------------------------

def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        elif b > a:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _minus(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out = []
    for s, e in a:
        cur = s
        for bs, be in b:
            if be <= cur or bs >= e:
                continue
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
        if cur < e:
            out.append((cur, e))
    return out


def _length(intervals: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in intervals)


def _raw_exposed_per_step(name: str) -> float:
    """µs per step: gloo's work with no op open on the compute threads (collective calls cut out)."""
    import raw

    events = raw.complete(name)
    gloo = [e for e in events if e["name"].startswith("gloo:")]
    gloo_threads = {(e["pid"], e["tid"]) for e in gloo}
    calls = _union([(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "cpu_op"
                    and e["name"].startswith(("c10d::", "record_param_comms"))])
    ops = _union([(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "cpu_op"
                  and (e["pid"], e["tid"]) not in gloo_threads])
    compute = _minus(ops, calls)
    steps = raw.steps(name)
    total = 0.0
    for s in steps:
        lo, hi = float(s["ts"]), float(s["ts"]) + float(s["dur"])
        comm = _union([(e["ts"], e["ts"] + e["dur"]) for e in gloo if lo <= e["ts"] < hi])
        total += _length(_minus(comm, compute))
    return total / len(steps)


@pytest.mark.parametrize("name, rank", [("straggler_2", 0), ("balanced_2", 0), ("balanced_2", 1)])
def test_impact_is_the_exposed_communication_per_step_from_the_raw_events(name, rank):
    import raw

    trace = f"gloo/{name}/rank-{rank}"
    finding = _finding(name, rank)
    per_step = _raw_exposed_per_step(trace)
    assert finding.impact.us == pytest.approx(per_step, rel=0.01)
    assert finding.impact.share == pytest.approx(per_step / raw.median_step_us(trace), abs=0.01)
    assert finding.severity.value == "critical"  # over 20% of the step on every one of these ranks
    assert "upper bound" in finding.basis


def test_over_the_folder_the_wait_for_the_straggler_leaves_the_waiting_rank():
    # one fact, one finding: rank 0 of straggler_2 waits ~30 ms per step for rank 1; that wait is the
    # straggler's impact, and what is left here is what rank 0's own overlap could save
    alone = _finding("straggler_2", 0)
    result = analyze_ranks(GLOO / "straggler_2", engine="inline")
    (straggler,) = result.cross.findings
    (folded,) = [f for f in result.rank(0).findings if f.rule == ID]
    peer = folded.record.late_peer
    assert peer is not None and peer.rank == 1
    assert peer.wait_us == pytest.approx(straggler.impact.us, rel=0.01)  # two ranks: the same wait
    assert 0.6 * SLEEP_MS * 1000 < peer.wait_us < alone.impact.us
    assert folded.impact.us == pytest.approx(alone.impact.us - peer.wait_us)
    assert folded.impact.share == pytest.approx(folded.impact.us / folded.record.step_us)
    assert folded.impact.share < alone.impact.share and folded.severity.value == "warning"
    assert "rank 1" in folded.basis and "straggler" in folded.advice
    # the straggler itself does not wait for anyone: nothing of its own is taken out
    assert all(f.record.late_peer is None for f in result.rank(1).findings if f.rule == ID)


def test_every_field_renders_in_spanish():
    result = analyze_ranks(GLOO / "straggler_2", engine="inline")
    folded = next(f for f in result.rank(0).findings if f.rule == ID)
    for finding in (_finding("balanced_2", 0), folded):
        es = localize_finding(finding, "es")
        for part in ("title", "message", "advice", "fix", "basis"):
            assert getattr(es, part) and getattr(es, part) != getattr(finding, part), part
        assert all(e.note and e.note != en.note for e, en in zip(es.evidence, finding.evidence, strict=True))
    gpu = msgspec.structs.replace(folded.record, domain="gpu", late_peer=None)
    es = localize_finding(dataclasses.replace(folded, record=gpu), "es")
    assert "GPU" in es.message and "bucket_cap_mb" in es.advice


# --- the collective, read from the trace (review 2: DDP's all-reduce advice for TorchRec's all-to-all) --------

KIND = (("alltoall", "all_to_all"), ("all2all", "all_to_all"), ("allreduce", "all_reduce"),
        ("allgather", "all_gather"), ("reducescatter", "reduce_scatter"), ("broadcast", "broadcast"))


def _kind(name: str) -> str:
    flat = "".join(c for c in name.lower() if c.isalnum())
    return next((kind for word, kind in KIND if word in flat), "")


def _raw_exposed_by_kind(path) -> dict[str, float]:
    """µs per step of NCCL kernels with no other device work beside them on their GPU, by the collective the
    host call around their launch names (its nccl:<op> region on the launching thread), else the kernel's own
    'Collective name'."""
    import gzip
    import json
    from collections import defaultdict

    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    regions = [e for e in events if e.get("cat") == "user_annotation" and str(e["name"]).startswith("nccl:")]
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    out: dict[str, float] = defaultdict(float)
    for k in device:
        if not k["name"].startswith("nccl"):
            continue
        launch = launches.get(k["args"].get("correlation"))
        at = launch or k
        if not any(float(s["ts"]) <= float(at["ts"]) < float(s["ts"]) + float(s["dur"]) for s in steps):
            continue
        around = [r for r in regions if launch and r["tid"] == launch["tid"] and raw_inside(r, launch)]
        kind = _kind(around[0]["name"]) if around else _kind(str(k["args"].get("Collective name", "")))
        compute = _union([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in device
                          if e["pid"] == k["pid"] and not e["name"].startswith("nccl")])
        out[kind] += _length(_minus([(float(k["ts"]), float(k["ts"]) + float(k["dur"]))], compute))
    return {kind: us / len(steps) for kind, us in out.items()}


def raw_inside(outer: dict, inner: dict) -> bool:
    return float(outer["ts"]) <= float(inner["ts"]) <= float(outer["ts"]) + float(outer["dur"])


FOREIGN = FIXTURES / "foreign"
DIFF_CONTROL = Path("/work/foreign_traces/_cache/hta_diff_control.json.gz")  # not committed: read where it is


@pytest.mark.parametrize("path", [FOREIGN / "hta_sampled_rank0.json.gz", DIFF_CONTROL], ids=lambda p: p.name)
def test_torchrecs_all_to_all_gets_pipelining_advice_not_ddps(path):
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    finding = analyze(path).finding(ID)
    by_kind = _raw_exposed_by_kind(path)
    assert max(by_kind, key=by_kind.get) == "all_to_all"  # ncclKernel_SendRecv under nccl:all_to_all
    assert finding.record.collective.startswith("ncclKernel_SendRecv") and finding.record.kind == "all_to_all"
    assert dict(finding.record.kinds)["all_to_all"] == pytest.approx(by_kind["all_to_all"], rel=0.02)
    assert "TrainPipelineSparseDist" in finding.advice and "TrainPipelineSparseDist" in finding.fix
    assert "bucket_cap_mb" not in finding.advice + finding.fix and "no_sync" not in finding.advice + finding.fix


def test_an_all_reduce_keeps_ddps_advice_whatever_its_kernel_is_called():
    """tl_mi300_resnet_ckpt: RCCL's ncclDevKernel_Generic, its 'Collective name' allreduce (DDP's gradients);
    hta_negq_rank0: every NCCL kernel is ncclKernel_SendRecv, and the all-reduces under nccl:all_reduce expose
    25 ms a step against the all-to-all's 5.7: DDP's advice, with the all-to-all said beside it."""
    mi300 = analyze(FOREIGN / "tl_mi300_resnet_ckpt.json.gz").finding(ID)
    assert mi300.record.kind == "all_reduce" and "bucket_cap_mb" in mi300.advice
    path = FOREIGN / "hta_negq_rank0.json.gz"
    negq = analyze(path).finding(ID)
    by_kind = _raw_exposed_by_kind(path)
    assert max(by_kind, key=by_kind.get) == "all_reduce" and by_kind["all_to_all"] > 0
    assert negq.record.kind == "all_reduce" and "bucket_cap_mb" in negq.advice
    kinds = dict(negq.record.kinds)
    for kind in ("all_reduce", "all_to_all"):
        assert kinds[kind] == pytest.approx(by_kind[kind], rel=0.02)
    assert "all-to-all" in negq.message


def test_gloos_all_reduce_is_read_as_one():
    finding = _finding("balanced_2", 0)
    assert finding.record.kind == "all_reduce" and "no_sync()" in finding.advice


def test_the_collectives_advice_in_spanish():
    finding = analyze(FOREIGN / "hta_sampled_rank0.json.gz").finding(ID)
    es = localize_finding(finding, "es")
    assert "TrainPipelineSparseDist" in es.advice and "no un all-reduce" in es.advice
    assert "Por colectiva" in es.message and es.fix != finding.fix
    for kind in ("all_gather", "broadcast"):
        other = dataclasses.replace(finding, record=msgspec.structs.replace(finding.record, kind=kind))
        en, es = localize_finding(other, "en"), localize_finding(other, "es")
        assert en.advice != es.advice and "bucket_cap_mb" not in en.advice + es.advice


# --- tensor parallelism, a peer's wait and NCCL's set-up, read from the trace (review 4) ---------------------------
# tokenomics' 4-layer LLaMA forward on 2 RTX 4090s (rank 0), DTensor tensor/sequence parallelism: FSDP's prefetch
# advice before, a 441 ms all-gather read as transfer time, and the first reduce-scatter's set-up as steady time

TP_DIM1024 = "foreign/rtx4090_tp2_llama_dim1024"
TP_ANNOT = "foreign/rtx4090_tp2_llama_annot"


def _nccl(name: str) -> list[dict]:
    import raw

    return sorted((k for k in raw.complete(name, "kernel") if k["name"].startswith("nccl")), key=lambda k: k["ts"])


def _of_kind(kernels: list[dict], word: str) -> list[float]:
    return [float(k["dur"]) for k in kernels if word in k["name"]]


@pytest.mark.parametrize("name", [TP_DIM1024, TP_ANNOT])
def test_tensor_parallel_activations_get_tensor_parallel_advice_not_fsdps(name):
    import raw

    finding = analyze(FIXTURES / f"{name}.json.gz").finding(ID)
    r = finding.record
    events = raw.complete(name)
    redistribute = [e for e in events if e["name"] == "Redistribute"]
    assert redistribute and not any("FSDP" in e["name"] or "FullyShardedDataParallel" in e["name"] for e in events)
    assert not any("Backward" in e["name"] or e["name"].startswith("autograd::engine") for e in events)
    # every NCCL kernel's launch sits under a Redistribute on the host
    launches = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime"}
    assert all(any(raw.inside(d, launches[k["args"]["correlation"]]) for d in redistribute) for k in _nccl(name))
    assert r.role == "tp" and r.forward_only and r.redistributes == len(redistribute)
    assert r.dtype == "fp32"  # the reduce-scatter kernels say so: ncclDevKernel_ReduceScatter_Sum_f32_RING_LL
    assert "not FSDP's parameters" in finding.advice and "bf16" in finding.advice and "fits on one GPU" in finding.advice
    assert "prefetch" not in finding.advice + finding.fix and "bucket_cap_mb" not in finding.advice
    assert "tensor-parallel activations" in finding.fix and "last reduce-scatter cannot hide" not in finding.basis
    es = localize_finding(finding, "es")
    assert "paralelismo de tensor" in es.advice and "parallelism" not in es.advice + es.message


def test_the_size_of_what_is_sent_comes_from_the_collective_call():
    import raw

    r = analyze(FIXTURES / f"{TP_DIM1024}.json.gz").finding(ID).record
    calls = [e for e in raw.complete(TP_DIM1024) if e["name"] == "nccl:reduce_scatter_tensor_coalesced"]
    dims = calls[0]["args"]["Input Dims"][0]
    assert calls[0]["args"]["Input type"][0] == "float" and dims == [4096, 8, 1024]
    assert r.message_bytes == 4 * dims[0] * dims[1] * dims[2]  # 128 MiB of fp32 activations a call


def test_a_call_far_longer_than_its_siblings_is_a_wait_for_another_rank():
    finding = analyze(FIXTURES / f"{TP_ANNOT}.json.gz").finding(ID)
    gathers = _of_kind(_nccl(TP_ANNOT), "AllGather")
    longest, median = max(gathers), statistics.median(gathers)
    assert longest >= 100 * median and sum(d >= 10 * median for d in gathers) == 1  # 442 ms against 3.6 ms
    w = finding.record.wait
    assert w is not None and w.kind == "all_gather" and w.calls == 1 and w.siblings == len(gathers)
    assert w.dur_us == pytest.approx(longest) and w.median_us == pytest.approx(median)
    assert w.exposed_us == pytest.approx(longest - median, rel=1e-3)  # no other kernel runs beside it
    assert w.exposed_us > 0.5 * finding.impact.us
    assert finding.advice.startswith("First compare the ranks") and "waiting for another rank" in finding.fix
    waiting = [e for e in finding.evidence if isinstance(e.detail, WaitingCall)]
    assert [e.dur_us for e in waiting] == [pytest.approx(longest)]


def test_calls_of_a_steady_transfer_are_no_wait():
    # the twin: dim1024's collectives after the first stay within 1.75x of their median
    finding = analyze(FIXTURES / f"{TP_DIM1024}.json.gz").finding(ID)
    for word in ("AllGather", "ReduceScatter"):
        durs = _of_kind(_nccl(TP_DIM1024), word)
        assert max(durs) < 10 * statistics.median(durs)
    assert finding.record.wait is None and not finding.advice.startswith("First compare")


def test_nccls_first_call_in_a_cold_window_is_one_time_set_up():
    import raw

    analysis = analyze(FIXTURES / f"{TP_DIM1024}.json.gz")
    finding = analysis.finding(ID)
    kernels = _nccl(TP_DIM1024)
    scatters = _of_kind(kernels, "ReduceScatter")
    first, later = scatters[0], statistics.median(scatters[1:])
    assert first > 4 * later and max(scatters[1:]) < 2 * later  # 59.7 ms, then 13.4-24.0 ms
    assert analysis.finding("dead-window") is not None  # the window holds the process's first calls
    r = finding.record
    assert r.setup_us == pytest.approx(first - later, rel=1e-3) and r.setup_ratio == pytest.approx(first / later)
    # what is left is the exposed communication less that set-up (nothing computes beside the collectives)
    compute = raw.merge([(float(k["ts"]), float(k["ts"]) + float(k["dur"])) for k in raw.device_work(TP_DIM1024)
                         if not k["name"].startswith("nccl")])
    comm = raw.merge([(float(k["ts"]), float(k["ts"]) + float(k["dur"])) for k in kernels])
    exposed = raw.total(raw.subtract(comm, compute))
    assert finding.impact.us == pytest.approx(exposed - r.setup_us, rel=1e-3)
    assert "one-time set-up" in finding.message and "one-time set-up" in finding.basis


def test_a_gloo_all_reduce_slow_at_its_first_call_is_no_set_up():
    # the twin: gloo connects when the group is made, and a steady window holds no first calls: balanced_4's first
    # all-reduce is 2.1x its others from the scheduler alone (4 ranks on 2 cores), and stays in the impact
    finding = _finding("balanced_4", 0)
    assert finding.record.setup_us == 0 and finding.record.wait is None
    assert finding.impact.us == pytest.approx(_raw_exposed_per_step("gloo/balanced_4/rank-0"), rel=0.01)


def test_fsdps_marker_keeps_fsdps_advice(tmp_path):
    """With an FSDP region in the trace, the same all-gathers are FSDP's (FSDP2 records FSDP::all_gather):
    dim1024 with its Redistribute regions renamed so."""
    import gzip
    import json

    data = json.loads(gzip.decompress((FIXTURES / f"{TP_DIM1024}.json.gz").read_bytes()))
    for e in data["traceEvents"]:
        if e.get("name") == "Redistribute":
            e["name"] = "FSDP::all_gather"
    path = tmp_path / "fsdp.json"
    path.write_text(json.dumps(data))
    finding = analyze(path).finding(ID)
    assert finding.record.role == "fsdp" and "forward_prefetch" in finding.advice
    assert "(the trace has no FSDP marker" not in finding.advice
