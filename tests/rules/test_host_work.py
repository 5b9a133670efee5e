"""host-work on real traces: NumPy preprocessing in the step (savings/h100/numpy_preprocess, inside a region and
with the region taken out of the file), and the traces whose gaps are dispatch, the autograd engine, the
optimizer's Python or the profiler's step bookkeeping, which must stay quiet."""

from __future__ import annotations

import gzip
import json

import pytest
import raw
from conftest import fixture

from pista.analysis import analyze
from pista.rules.host_work import HOST_WORK_GAP_NS, ID

NUMPY = "savings/h100/numpy_preprocess__broken"


def _stretches_us(name: str, region: str) -> list[float]:
    """From the raw JSON: per step, the longest time on the step's thread inside `region` with no cpu_op and
    no runtime call (what the NumPy code took)."""
    ops = [e for e in raw.complete(name) if e.get("cat") in ("cpu_op", "cuda_runtime", "cuda_driver")]
    out = []
    for r in raw.complete(name, "user_annotation", region):
        lo, hi = float(r["ts"]), float(r["ts"]) + float(r["dur"])
        inside = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ops
                        if e["tid"] == r["tid"] and lo <= float(e["ts"]) < hi)
        cur, longest = lo, 0.0
        for a, b in inside:
            longest = max(longest, a - cur)
            cur = max(cur, b)
        out.append(max(longest, hi - cur))
    return out


def test_numpy_preprocessing_in_a_region_is_found_and_its_frame_named():
    f = next(f for f in analyze(fixture(NUMPY), rules=[ID], replay=False).findings)
    longest = max(_stretches_us(NUMPY, "preprocess"))
    assert longest * 1000 >= HOST_WORK_GAP_NS
    assert f.record.longest_us == pytest.approx(longest, rel=0.05)
    assert f.record.frames and "pairs.py(" in f.record.frames[0][0]  # the user's step, from the stacks
    assert f.severity.value == "critical" and "DataLoader" in f.advice


def test_the_same_work_outside_any_region_is_host_work(tmp_path):
    """The trace with its `preprocess` region taken out (a user who wrote none): gpu-idle has no region to
    name; host-work names the same stretch, and the engine predicts about the same saving."""
    with gzip.open(fixture(NUMPY), "rt") as f:
        data = json.load(f)
    data["traceEvents"] = [e for e in data["traceEvents"] if e.get("name") != "preprocess"]
    path = tmp_path / "no_region.json.gz"
    with gzip.open(path, "wt") as out:
        json.dump(data, out)
    with_region = analyze(fixture(NUMPY))
    without = analyze(str(path))
    assert "gpu-idle" not in {f.rule for f in without.findings}
    f = next(f for f in without.findings if f.rule == ID)
    assert without.top_fix is f and f.severity.value == "critical"
    region = next(f for f in with_region.findings if f.rule == "gpu-idle")
    assert f.impact.rank_share == pytest.approx(region.impact.rank_share, rel=0.2)


@pytest.mark.parametrize("name", ["savings/h100/healthy_gpt_bf16__broken", "savings/h100/healthy_resnet_cl__broken",
                                  "savings/h100/healthy_compiled_bf16__broken", "savings/h100/numpy_preprocess__fixed",
                                  "savings/h100/optim_adam_loop__broken", "series_mlp_eager", "gpu/layout_r50_cl_bf16",
                                  "gpu/bert_fixed", "gpu/eval_first_call", "seed_mm64_cold", "gpu/kernel_variability"])
def test_dispatch_autograd_optimizer_and_profiler_gaps_are_quiet(name):
    loud = [f for f in analyze(fixture(name)).findings if f.rule == ID and f.severity.value != "info"]
    assert not loud, [f.impact for f in loud]


def _frames_at(name: str, t: float, tid) -> list[str]:
    """From the raw JSON: the python_function frames running at t on the thread, outermost first."""
    frames = [e for e in raw.complete(name, "python_function") if e["tid"] == tid
              and float(e["ts"]) <= t < float(e["ts"]) + float(e["dur"])]
    return [e["name"] for e in sorted(frames, key=lambda e: (float(e["ts"]), -float(e["dur"])))]


@pytest.mark.parametrize("name", ["foreign/tl_h100_bert_small", "foreign/tl_mi300_bert_small"])
def test_a_librarys_python_in_the_standard_library_is_not_the_users_work(name):
    """TraceLens' BERT traces: Hugging Face's forward checks signatures each call, 140-150 µs a step in
    inspect.py under transformers' frames. That is the framework's Python (overhead-bound's, which says what
    removes it), not preprocessing to move to DataLoader workers, and it must not lead the reading."""
    step = raw.steps(name)[0]
    lo, hi = float(step["ts"]), float(step["ts"]) + float(step["dur"])
    inspect = [e for e in raw.complete(name, "python_function") if e["name"].startswith("inspect.py(")
               and lo <= float(e["ts"]) < hi]
    assert sum(float(e["dur"]) for e in inspect) > 100  # µs: the stretch is there
    # the first frame above inspect's that is not the standard library's is transformers'
    e = max(inspect, key=lambda e: float(e["dur"]))
    callers = [f for f in _frames_at(name, float(e["ts"]), e["tid"])
               if not f.startswith(("inspect.py(", "<", "typing.py(", "functools.py("))]
    assert callers and callers[-1].startswith("transformers/")
    analysis = analyze(fixture(name))
    assert ID not in {f.rule for f in analysis.findings if f.severity.value != "info"}
    assert analysis.top_fix is not None and analysis.top_fix.rule == "overhead-bound"


def test_the_users_frames_are_still_named_with_the_standard_library_below_them():
    """savings/h100/python_tokenize: the user's tokenizer (str.split, dict lookups) stays the user's work."""
    f = next(f for f in analyze(fixture("savings/h100/python_tokenize__broken")).findings if f.rule == ID)
    assert f.record.frames and all(not n.startswith(("inspect.py", "typing.py")) for n, _ in f.record.frames)
    assert "pairs.py(" in f.record.frames[0][0]


TIMESFORMER = "foreign/tl_h100_timesformer"


def _longest_op_free_us(name: str) -> tuple[float, float, float]:
    """From the raw JSON: in the first step, on the step's thread, the longest stretch with no cpu_op and no
    runtime call (start, end, µs)."""
    step = raw.steps(name)[0]
    lo, hi = float(step["ts"]), float(step["ts"]) + float(step["dur"])
    busy = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in raw.complete(name)
                  if e.get("cat") in ("cpu_op", "cuda_runtime", "cuda_driver") and e["tid"] == step["tid"]
                  and lo <= float(e["ts"]) < hi)
    best, cur = (lo, lo), lo
    for a, b in [*busy, (hi, hi)]:
        if a - cur > best[1] - best[0]:
            best = (cur, a)
        cur = max(cur, b)
    return best[0], best[1], best[1] - best[0]


def test_hugging_face_preprocessing_is_the_users_work_named_by_its_caller():
    """TraceLens' TimeSformer pipeline (H100): the video-classification pipeline's preprocess (VideoMAE's image
    processor, read_video_pyav) holds the step's first 215 ms with no op and the GPU idle. Its frames are under
    transformers/, yet it is preprocessing the program chose (batch it, workers, the fast processor), not the
    framework's dispatch: all of it counts, and the finding names the user's frame that called the pipeline."""
    a, b, dur = _longest_op_free_us(TIMESFORMER)
    step = raw.steps(TIMESFORMER)[0]
    frames = [e for e in raw.complete(TIMESFORMER, "python_function") if e["tid"] == step["tid"]]
    mid = (a + b) / 2
    stack = [e["name"] for e in sorted((e for e in frames if float(e["ts"]) <= mid < float(e["ts"]) + float(e["dur"])),
                                       key=lambda e: (float(e["ts"]), -float(e["dur"])))]
    entry = next(k for k, n in enumerate(stack) if n.startswith("transformers/pipelines/") and n.endswith(": preprocess"))
    caller = next(n for n in reversed(stack[:entry]) if not n.startswith(("transformers/", "torch/", "<")))
    f = next(f for f in analyze(fixture(TIMESFORMER), rules=[ID], replay=False).findings)
    assert f.record.longest_us == pytest.approx(dur, rel=0.02)
    assert f.record.preprocess is not None and f.record.preprocess.entry == stack[entry]
    assert f.record.preprocess.caller == caller and caller.startswith("moca/")
    assert f.record.preprocess.us == pytest.approx(dur, rel=0.05)
    assert f.impact.share == pytest.approx(f.record.idle_us / float(step["dur"]), rel=0.02) and f.impact.share > 0.5
    assert "use_fast=True" in f.advice and "batch_size" in f.advice
    f.lang = "es"
    assert "preprocesado de Hugging Face" in f.message and "use_fast=True" in f.advice


@pytest.mark.parametrize("name", ["foreign/tl_h100_bert_small", "foreign/tl_mi300_bert_small"])
def test_hugging_face_model_code_stays_the_frameworks(name):
    """The twin: a BERT's forward under transformers/ (modeling_bert, its signature checks in inspect.py) is
    framework dispatch, not preprocessing: no host-work finding names a library's preprocessing there."""
    found = [f for f in analyze(fixture(name), rules=[ID], replay=False).findings]
    assert all(f.record.preprocess is None for f in found)
    assert all(f.severity.value == "info" for f in found)


def test_a_backward_region_whose_ops_the_trace_dropped_is_not_host_work():
    """Review 3/4 (HTA's sampled traces): `## backward ##` lasts 220 ms and more a step with its ops dropped by the
    sampler; the gaps in it are the backward, not Python work. The launching thread's gaps inside the region,
    from the raw events, are most of what host-work had read (166 ms a step on rank 1); it leaves them out."""
    name = "foreign/hta_sampled_rank0"
    f = next(f for f in analyze(str(fixture(name)), replay=False).findings if f.rule == ID)
    regions = [e for e in raw.complete(name, "user_annotation") if e["name"] == "## backward ##"]
    steps = raw.steps(name)
    tid = steps[0]["tid"]
    calls = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in raw.complete(name)
                   if e.get("cat") in ("cpu_op", "cuda_runtime") and e["tid"] == tid)
    inside = 0.0
    for r in regions:
        lo, hi = float(r["ts"]), float(r["ts"]) + float(r["dur"])
        end = lo
        for a, b in calls:
            if b <= lo or a >= hi:
                continue
            if a - end >= HOST_WORK_GAP_NS / 1000:
                inside += a - end
            end = max(end, b)
        if hi - end >= HOST_WORK_GAP_NS / 1000:
            inside += hi - end
    per_step = inside / len(steps)
    assert per_step > 100_000  # the dropped backward: over 100 ms a step of gaps
    assert f.record.work_us < 0.5 * per_step and f.severity.value != "critical"


def test_overhead_bound_leaves_the_host_s_own_work_to_it(analysis_of):
    """Review 4 (tl_mi300_timesformer: overhead-bound said 249 ms a step of per-op overhead for the preprocessing
    host-work names): host-work declares the GPU idle under its stretches, and overhead-bound's per-op idle on
    savings/h100/numpy_augment leaves it out: the two claims do not overlap."""
    from pista.rules import host_work

    name = "savings/h100/numpy_augment__broken"
    a = analysis_of(name)
    hw = next(f for f in a.findings if f.rule == ID)
    ob = next(f for f in a.findings if f.rule == "overhead-bound")
    from conftest import fixture as _fixture

    from pista.cli.common import open_trace

    facts = open_trace(str(_fixture(name)), quiet=True)
    claim = host_work.claimed_idle(facts)
    steps = len(raw.steps(name))
    assert claim.total / 1000 / steps == pytest.approx(hw.record.idle_us, rel=0.01)
    # the step's GPU idle holds both: what is left to overhead-bound is at most the rest
    assert ob.record.per_op_us_per_step <= ob.record.idle_us_per_step - hw.record.idle_us + 1.0
