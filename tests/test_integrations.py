"""pista.integrations on the real frameworks: a tiny BERT under transformers' Trainer and a tiny
LightningModule under Lightning's Trainer, both on the CPU, profile steps 2-4 of 8 and write the
trace and the analysis; pista's own failures turn into warnings and training goes on."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.capture

MAX_STEPS = 8
START, ACTIVE = 2, 3


def check_run(out, capsys) -> dict:
    """The trace pista reads, with exactly ACTIVE steps, and its analysis beside it."""
    trace = out / "trace.json.gz"
    assert trace.exists() and (out / "table.txt").exists()
    assert len(profiler_steps(trace)) == ACTIVE
    analysis = json.loads((out / "analysis.json").read_text())
    assert analysis["summary"]["verdict"] == "cpu-only"
    assert isinstance(analysis["findings"], list)
    text = (out / "analysis.txt").read_text()
    assert "cpu-only" in text
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("pista: profiled")]
    assert len(lines) == 1 and f"steps {START}-{START + ACTIVE - 1}" in lines[0] and str(trace) in lines[0]
    # the run's steps, and the numbers the trace gives them (torch counts from the profiler's start)
    numbers = [int(n.removeprefix("ProfilerStep#")) for n in profiler_steps(trace)]
    assert f"(ProfilerStep#{numbers[0]}-#{numbers[-1]} in the trace)" in lines[0], lines[0]
    # analysis.txt is a file: each finding whole, one logical line per line
    assert all(line == line.rstrip() for line in text.splitlines())
    return analysis


def profiler_steps(trace) -> list[str]:
    """The ProfilerStep#N regions pista reads from the trace, in order."""
    from pista.trace.load import load_trace
    from pista.trace.model import PH_COMPLETE

    t = load_trace(trace)
    names = [t.names[n] for n, ph in zip(t.name.tolist(), t.ph.tolist(), strict=True) if ph == PH_COMPLETE]
    return [n for n in names if n.startswith("ProfilerStep#")]


# -- transformers ------------------------------------------------------------------------------


def hf_trainer(tmp_path, callback):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32, num_labels=2)
    model = BertForSequenceClassification(config)
    ids = torch.randint(0, 100, (64, 16))
    dataset = [{"input_ids": ids[i], "attention_mask": torch.ones(16, dtype=torch.long),
                "labels": int(i % 2)} for i in range(64)]
    args = TrainingArguments(output_dir=str(tmp_path / "hf-out"), max_steps=MAX_STEPS, per_device_train_batch_size=4,
                             report_to=[], use_cpu=True, save_strategy="no", logging_strategy="no",
                             disable_tqdm=True, dataloader_num_workers=0)
    return Trainer(model=model, args=args, train_dataset=dataset, callbacks=[callback])


def test_hf_trainer_profiles_steps_2_to_4(tmp_path, capsys):
    from pista.integrations import PistaWarning
    from pista.integrations.hf import PistaCallback

    callback = PistaCallback(out=tmp_path / "pista", start_step=START, active=ACTIVE)
    trainer = hf_trainer(tmp_path, callback)
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=PistaWarning)
        trainer.train()
    assert trainer.state.global_step == MAX_STEPS
    check_run(tmp_path / "pista", capsys)
    assert callback.analysis is not None and callback.trace_path == tmp_path / "pista" / "trace.json.gz"
    from pista.integrations import PistaTrainerCallback

    assert PistaTrainerCallback is PistaCallback
    # BERT's own ops are in the recorded steps
    from pista.trace.load import load_trace

    names = set(load_trace(callback.trace_path).names)
    assert "aten::addmm" in names or "aten::linear" in names


# -- Lightning ---------------------------------------------------------------------------------


def lightning_fit(callback, max_steps=MAX_STEPS, package="lightning"):
    L = pytest.importorskip(package if package == "pytorch_lightning" else "lightning.pytorch")

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.cross_entropy(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 16), torch.randint(0, 2, (64,)))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=max_steps, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, callbacks=[callback])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(num_workers|does not have many workers).*")
        trainer.fit(Tiny(), loader)
    return trainer


@pytest.mark.parametrize("package", ["lightning", "pytorch_lightning"])
def test_lightning_profiles_steps_2_to_4(tmp_path, capsys, package):
    """The same class under `lightning` and the standalone `pytorch_lightning`."""
    from pista.integrations import PistaWarning
    from pista.integrations.lightning import PistaCallback

    callback = PistaCallback(out=tmp_path, start_step=START, active=ACTIVE)
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=PistaWarning)
        trainer = lightning_fit(callback, package=package)
    assert trainer.global_step == MAX_STEPS
    check_run(tmp_path, capsys)
    assert callback.out_dir == tmp_path
    from pista.integrations import PistaLightningCallback

    assert PistaLightningCallback is PistaCallback


def test_lightning_pista_failure_is_a_warning(tmp_path, monkeypatch, capsys):
    """An analysis that raises leaves the trace, warns, and training reaches max_steps."""
    import pista.analysis
    from pista.integrations import PistaWarning
    from pista.integrations.lightning import PistaCallback

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(pista.analysis, "analyze", broken)
    callback = PistaCallback(out=tmp_path, start_step=1, active=2)
    with pytest.warns(PistaWarning, match="analysis failed: RuntimeError: boom"):
        trainer = lightning_fit(callback)
    assert trainer.global_step == MAX_STEPS
    assert (tmp_path / "trace.json.gz").exists() and not (tmp_path / "analysis.json").exists()


def test_lightning_short_run_keeps_the_steps_recorded(tmp_path, capsys):
    """Training that ends inside the window saves what it recorded; one that ends before it warns."""
    from pista.integrations import PistaWarning
    from pista.integrations.lightning import PistaCallback

    callback = PistaCallback(out=tmp_path / "a", start_step=2, active=3)
    lightning_fit(callback, max_steps=3)
    # step 2 and the open region torch keeps from its end until the profiler stops at train end
    assert profiler_steps(tmp_path / "a" / "trace.json.gz") == ["ProfilerStep#1", "ProfilerStep#2"]
    assert "(training ended after 1 of 3)" in capsys.readouterr().err
    assert (tmp_path / "a" / "analysis.json").exists()

    callback = PistaCallback(out=tmp_path / "b", start_step=5)
    with pytest.warns(PistaWarning, match="nothing was profiled"):
        lightning_fit(callback, max_steps=3)
    assert not (tmp_path / "b").exists()


# -- without the frameworks ----------------------------------------------------------------------


def test_import_without_the_frameworks():
    """`import pista.integrations` needs neither; each submodule names its extra."""
    code = """
import sys
for name in ("transformers", "lightning", "pytorch_lightning"):
    sys.modules[name] = None
import pista.integrations
for mod, extra in (("hf", "pista[hf]"), ("lightning", "pista[lightning]")):
    try:
        __import__("pista.integrations." + mod)
    except ImportError as err:
        assert extra in str(err), err
    else:
        raise SystemExit(mod + " imported without its framework")
assert "torch" not in sys.modules
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_bad_arguments():
    from pista.errors import UsageError
    from pista.integrations import StepProfiler

    for kwargs in ({"start_step": -1}, {"active": 0}, {"lang": "xx"}):
        args = {"out": None, "start_step": 2, "active": 3, "with_stack": False, "profile_memory": False,
                "lang": "en", "label": "t"} | kwargs
        with pytest.raises(UsageError):
            StepProfiler(**args)
