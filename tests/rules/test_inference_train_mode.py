"""inference-train-mode: inference with the model left in train() (grad_mode.py's `train` twins)."""

from __future__ import annotations

import bisect

import pytest
import raw

from pista.i18n import localize_finding

RULE = "inference-train-mode"


def _training_norms(name: str) -> list[dict]:
    return [e for e in raw.in_steps(name, raw.complete(name, "cpu_op", "aten::batch_norm"))
            if e["args"]["Concrete Inputs"][5] == "True"]


def _kernel_us_under(name: str, outer: list[dict], leave_out: str) -> float:
    """The GPU time of the kernels whose op (by External id) lies inside one of `outer`, on its thread."""
    ops = {e["args"]["External id"]: e for e in raw.complete(name, "cpu_op") if "External id" in e.get("args", {})}
    spans = sorted((float(o["ts"]), float(o["ts"]) + float(o["dur"]), o["tid"]) for o in outer)
    starts = [s[0] for s in spans]
    total = 0.0
    for k in raw.complete(name, "kernel"):
        op = ops.get(k.get("args", {}).get("External id"))
        if op is None or leave_out in k["name"]:
            continue
        j = bisect.bisect_right(starts, float(op["ts"])) - 1
        if j >= 0 and spans[j][2] == op["tid"] and float(op["ts"]) + float(op["dur"]) <= spans[j][1]:
            total += float(k["dur"])
    return total


def test_batch_norm_in_training_mode_during_inference(analysis_of):
    name = "gpu/resnet50_train"
    finding = analysis_of(name).finding(RULE)
    assert finding is not None
    steps = len(raw.steps(name))
    norms = _training_norms(name)
    assert finding.record.batch_norms_per_step == len(norms) / steps == 53  # every BatchNorm2d of ResNet-50
    assert finding.record.dropouts_per_step == 0
    kernel_us = _kernel_us_under(name, norms, "batch_norm_transform_input") / steps
    assert finding.record.kernel_us_per_step == pytest.approx(kernel_us, rel=0.001)
    # BatchNorm's num_batches_tracked += 1 before each: aten::add_ on 0-d long tensors, none in eval
    counters = [e for e in raw.in_steps(name, raw.complete(name, "cpu_op", "aten::add_"))
                if all(d == [] for d in e["args"]["Input Dims"]) and e["args"]["Input type"][0] == "long int"]
    assert finding.record.counter_updates_per_step == len(counters) / steps == 53
    assert finding.impact.us == pytest.approx(kernel_us * finding.record.busy_share + finding.record.idle_us_per_step,
                                              rel=0.01)
    assert finding.severity.value == "warning"
    assert "model.eval()" in finding.fix
    analysis = analysis_of(name)
    assert analysis.top_fix is finding  # wrong outputs first
    assert analysis.finding("many-calls") is None  # the counters' add_ are this finding's


def test_channels_last_leaves_out_the_training_only_kernels(analysis_of):
    from pista.rules._train_mode import training_kernels

    facts = analysis_of("gpu/resnet50_train").facts
    names = {facts.trace.event_name(int(k)) for k in training_kernels(facts)}
    assert any("batch_norm_collect_statistics" in n for n in names)
    assert not any("batch_norm_transform_input" in n for n in names)  # eval runs it too
    train = analysis_of("gpu/resnet50_train").finding("channels-last")
    twin = analysis_of("gpu/resnet50_nograd").finding("channels-last")
    # what is left of the NCHW path is the eval twin's (the transposes, transform_input, pooling)
    assert train.record.kernel_us == pytest.approx(twin.record.kernel_us, rel=0.1)


def test_dropout_that_drops_during_decoding(analysis_of):
    name = "gpu/gpt2_decode_train"
    finding = analysis_of(name).finding(RULE)
    ops = raw.in_steps(name, raw.complete(name, "cpu_op"))
    dropping = [d for d in ops if d["name"] == "aten::dropout"
                and any(o["name"] == "aten::native_dropout" and raw.inside(d, o) for o in ops)]
    assert finding.record.dropouts_per_step == len(dropping) / len(raw.steps(name)) == 25  # 12 blocks x 2 + embeddings
    assert finding.record.idle_us_per_step > 0
    # a few kernels' GPU time: the dispatch idle makes the impact, and the wrong outputs the severity
    assert finding.severity.value == "warning"
    # transformers hands SDPA the attention dropout in train(): dropout_p 0.1 in its Concrete Inputs
    sdpa = [e for e in ops if e["name"] == "aten::scaled_dot_product_attention"
            and float(e["args"]["Concrete Inputs"][4]) > 0]
    assert finding.record.attention_dropouts_per_step == len(sdpa) / len(raw.steps(name)) == 12
    assert finding.record.attention_dropout_p == pytest.approx(0.1)
    # eval() sets dropout_p to 0, and SDPA then picks cuDNN attention here (gpu/gpt2_decode_nograd: cudnn-setup)
    assert "sdpa_kernel" in finding.fix and "sdpa_kernel" in finding.advice
    assert analysis_of("gpu/gpt2_decode_nograd").finding("cudnn-setup") is not None


@pytest.mark.parametrize("name", ["gpu/resnet50_nograd", "gpu/gpt2_flash_nograd", "gpu/kv_flash", "gpu/resnet50_grad",
                                  "gpu/layout_r50_nchw_bf16", "gpu/attn_manual", "big_gpt_eager_20steps"])
def test_silent_in_eval_and_in_training(analysis_of, name):
    # eval twins, and training (dropout and batch norm in training mode are right there)
    assert analysis_of(name).finding(RULE) is None


def test_the_per_op_rules_leave_the_dropouts_idle(analysis_of):
    from pista.rules import inference_train_mode
    from pista.rules._idle import intersect
    from pista.rules._launches import launch_bound_idle

    analysis = analysis_of("gpu/gpt2_decode_train")
    claim = inference_train_mode.claimed_idle(analysis.facts)
    assert claim.total > 0
    assert intersect(launch_bound_idle(analysis.facts), claim).total == 0
    assert sum(f.impact.share for f in analysis.findings) <= 1.0


def test_spanish(analysis_of):
    finding = localize_finding(analysis_of("gpu/resnet50_train").finding(RULE), "es")
    assert "model.eval()" in finding.fix and "estadísticas" in finding.message


def test_bert_left_in_train_mode(analysis_of):
    # BERT built and called as it is: train() by default, its dropouts drop (pista profile's capture)
    name = "gpu/bert_as_written"
    finding = analysis_of(name).finding(RULE)
    ops = raw.in_steps(name, raw.complete(name, "cpu_op"))
    native = [e for e in ops if e["name"] == "aten::native_dropout"]
    assert finding.record.dropouts_per_step == len(native) / len(raw.steps(name))
    assert analysis_of(name).top_fix is finding
    assert analysis_of("gpu/bert_fixed").finding(RULE) is None
    # its SDPA runs cuDNN attention already (dropout and all): no backend warning; grad mode is on too
    sdpa = [e for e in ops if e["name"] == "aten::scaled_dot_product_attention"]
    cudnn = [e for e in ops if e["name"] == "aten::_scaled_dot_product_cudnn_attention"]
    assert len(sdpa) == len(cudnn) > 0
    assert "sdpa_kernel" not in finding.fix and "inference_mode()" in finding.fix
    assert "batch-norm" not in finding.fix


def test_without_steps_it_says_the_condition_and_does_not_come_first(tmp_path, analysis_of):
    # a training forward profiled alone looks the same: info, the condition said, not the top fix
    from pista.analysis import analyze

    path = raw.without_steps("gpu/resnet50_train", tmp_path)
    analysis = analyze(path)
    finding = analysis.finding(RULE)
    assert finding is not None and finding.severity.value == "info" and "does not apply" in finding.message
    assert analysis.top_fix is not finding
    # nothing says the window is inference: the wrong outputs are a condition, not a fact (issue 35: benchmark
    # windows '[param|...|warmup|forward]' were told "The outputs are wrong")
    assert "If this window is inference" in finding.message and "The outputs are wrong" not in finding.message
    assert "Si esta ventana es inferencia" in localize_finding(finding, "es").message
    assert "The outputs are wrong" in analysis_of("gpu/resnet50_train").finding(RULE).message  # with steps: a fact


def test_on_a_cpu_only_trace_the_cost_is_host_time(analysis_of):
    """dtu_gabriellanaro (a ResNet forward on a laptop CPU, no GPU): batch norm in training mode costs CPU time, which
    eval() mostly saves; it was priced at "0 µs of GPU time" (review 5). A GPU trace's finding keeps pricing kernels."""
    from pista.rules.inference_train_mode import CPU_BATCH_NORM_EVAL_SAVING

    name = "foreign/dtu_gabriellanaro"
    finding = analysis_of(name).finding(RULE)
    assert finding is not None
    norms = [e for e in raw.complete(name, "cpu_op", "aten::batch_norm")
             if e["args"].get("Concrete Inputs", [None] * 6)[5] in ("True", None)]
    assert norms
    expected = CPU_BATCH_NORM_EVAL_SAVING * sum(float(e["dur"]) for e in norms)
    assert finding.metrics["cpu_us_per_step"] == pytest.approx(expected, rel=0.01)
    assert finding.impact.us == pytest.approx(expected, rel=0.01)
    assert "On the CPU, eval() saves" in finding.message
    gpu = analysis_of("gpu/resnet50_train").finding(RULE)
    assert gpu is not None and gpu.metrics["cpu_us_per_step"] == 0 and "GPU time" in gpu.message
