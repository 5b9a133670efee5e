"""The catalogue as a whole: every rule documented and tested, verdicts on the named fixtures,
no rule that fires everywhere, and GPU rules silent on a CPU-only trace."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import H200_TRACES

import pista.rules
from pista.analysis import analyze
from pista.config import Config, apply_thresholds
from pista.rules import catalogue, get_rule, shared_modules

RULE_IDS = {
    "overhead-bound", "compute-bound", "dominant-event", "many-calls", "gemm-heuristics",
    "implicit-copy-before-gemm", "profiler-overhead", "kernel-variability", "dead-window", "cold-start",
    "trailing-sync", "compile-overhead", "lazy-loading", "host-sync", "pageable-memcpy", "gpu-idle",
    "launch-bound", "fp32-gemm", "recompilation", "fp64-gemm", "unfused-optimizer", "autocast-casts",
    "unfused-epilogue", "unfused-elementwise", "allocator-churn", "memory-growth",
}
TESTS = Path(__file__).parent
# Rules that look at the host only and may speak on a CPU-only trace.
HOST_RULES = {"many-calls", "dead-window", "cold-start", "dominant-event", "straggler", "cpu-fp32-gemm", "cpu-threads",
              "unfused-optimizer"}


def test_the_issue_s_rules_are_all_there():
    assert {r.id for r in catalogue()} >= RULE_IDS


@pytest.mark.parametrize("rule", catalogue(), ids=lambda r: r.id)
def test_rule_is_documented(rule):
    for section in ("What", "Why", "Example", "Impact", "Fix"):
        assert len(rule.section(section)) > 20, f"{rule.id}: '{section}:' section missing or empty"
    assert rule.title and rule.check
    assert rule.thresholds or rule.id in {"compute-bound"}, f"{rule.id}: thresholds should be named constants"


@pytest.mark.parametrize("rule", catalogue(), ids=lambda r: r.id)
def test_rule_has_its_own_tests(rule):
    module = rule.module.__name__.rsplit(".", 1)[1]
    assert (TESTS / "rules" / f"test_{module}.py").exists() or (TESTS / f"test_{module}.py").exists()


RULES_DIR = Path(pista.rules.__path__[0])


def _rules_imported(path: Path) -> list[str]:
    """The rule modules a module of pista.rules imports, anywhere in it: `pista.rules.<name>` or `from
    pista.rules import <name>` (relative or absolute) whose name does not start with `_`. The package's
    own functions (catalogue, get_rule) count too: a rule that needs another rule's work takes it from a
    shared `_` module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "pista.rules" + (f".{node.module}" if node.module else "") if node.level == 1 else node.module or ""
            modules = [f"{base}.{alias.name}" for alias in node.names] if base == "pista.rules" else [base]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[:2] == ["pista", "rules"] and len(parts) > 2 and not parts[2].startswith("_"):
                found.append(parts[2])
    return found


@pytest.mark.parametrize("path", sorted(p for p in RULES_DIR.glob("*.py") if not p.name.startswith("_")),
                         ids=lambda p: p.stem)
def test_no_rule_imports_another(path):
    """Adding a rule is the rule, its text and its tests: what several rules use lives in a shared `_`
    module (the GPU-idle ledger in _idle, cuDNN's set-up calls in _cudnn...), never in another rule."""
    assert _rules_imported(path) == [], f"{path.stem} imports rule modules: move what it takes to a shared module"


@pytest.mark.parametrize("path", sorted(p for p in RULES_DIR.glob("_*.py") if p.name != "__init__.py"),
                         ids=lambda p: p.stem)
def test_no_shared_module_imports_a_rule(path):
    """The shared modules reach rules only through the catalogue (catalogue() itself is allowed here)."""
    assert set(_rules_imported(path)) <= {"catalogue"}, path.stem


def test_a_threshold_lives_in_one_place():
    """A rule's thresholds are its module's and those of the shared modules that hold its detection
    (THRESHOLDS_OF): a name in both is one object, imported, never a copy."""
    ids = {r.id for r in catalogue()}
    for module in shared_modules():
        assert getattr(module, "THRESHOLDS_OF", None) in ids | {None}, module.__name__
    for rule in catalogue():
        for name in rule.thresholds:
            values = [vars(m)[name] for m in rule.modules if name in vars(m)]
            assert all(v is values[0] for v in values), f"{rule.id}: {name} is defined twice"


def test_a_shared_threshold_is_set_where_it_is_read(monkeypatch):
    """[tool.pista.rules.<id>] sets a threshold in the shared module that reads it, and in the rule's
    own module where it imports it too."""
    ledger_module = get_rule("gpu-idle").modules[0]
    gelu_module = get_rule("tanh-gelu").modules[0]
    tanh_gelu = get_rule("tanh-gelu").module
    for name in ("SLOW_REGION_NS", "BEFORE"):
        _restore_everywhere(monkeypatch, name)  # put back after the test, in every module it reaches
    apply_thresholds(Config(thresholds={"gpu-idle": {"SLOW_REGION_NS": 7}, "tanh-gelu": {"BEFORE": 4}}))
    assert ledger_module.SLOW_REGION_NS == 7 and ledger_module.__name__ == "pista.rules._idle"
    assert gelu_module.BEFORE == 4 and tanh_gelu.BEFORE == 4


def test_verdicts_on_the_seed_fixtures(analysis_of):
    assert analysis_of("seed_mm64_warm").summary.verdict == "overhead-bound"
    assert analysis_of("seed_mm4096_warm").summary.verdict == "compute-bound"
    assert analysis_of("gpu/cpu_only").summary.verdict == "cpu-only"


def test_named_fixtures_show_their_findings(analysis_of):
    # the cold first step is one finding: its profiler request, module loads and cuBLAS set-up are
    # told inside cold-start's message, not restated by four more rules
    cold = set(analysis_of("seed_mm64_cold").rules_fired)
    assert "cold-start" in cold and not cold & {"lazy-loading", "profiler-overhead", "dead-window",
                                                 "gemm-heuristics"}
    assert "compile-overhead" in set(analysis_of("seed_mm4096_compile").rules_fired)


def test_no_rule_fires_on_every_trace(analysis_of):
    fired = [set(analysis_of(name).rules_fired) for name in H200_TRACES]
    everywhere = set.intersection(*fired)
    assert not everywhere, f"rules firing on all {len(fired)} real traces: {everywhere}"


def test_gpu_rules_are_silent_on_a_cpu_only_trace(analysis_of):
    analysis = analysis_of("gpu/cpu_only")
    assert analysis.summary.self_device_total_us == 0
    assert set(analysis.rules_fired) <= HOST_RULES


def test_a_trace_without_profiler_steps_is_analyzed(analysis_of):
    analysis = analysis_of("seed_mm4096_compile_cold")
    assert analysis.summary.steps == 0
    for finding in analysis.findings:
        assert all(e.step is None for e in finding.evidence)


@pytest.mark.parametrize("name", H200_TRACES)
def test_every_finding_carries_evidence_from_the_trace(name, analysis_of):
    analysis = analysis_of(name)
    trace = analysis.facts.trace
    lo, hi = trace.start_ns / 1000.0, trace.end_ns / 1000.0
    for finding in analysis.findings:
        assert finding.message and finding.advice and finding.title
        assert finding.evidence, f"{finding.rule} on {name} has no evidence"
        for e in finding.evidence:
            assert lo - 1 <= e.ts_us <= hi + 1, (finding.rule, e)
            assert e.dur_us >= 0 and e.lane


def test_explain_every_rule_from_the_cli():
    for rule in catalogue():
        out = subprocess.run([sys.executable, "-m", "pista", "explain", rule.id], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(rule.id) and "Fix:" in out.stdout


def test_rules_lists_the_catalogue():
    out = subprocess.run([sys.executable, "-m", "pista", "rules"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    listed = {line.split()[0] for line in out.stdout.splitlines() if line.strip()}
    assert listed == {r.id for r in catalogue()}


def test_readme_lists_the_catalogue():
    readme = (TESTS.parent / "README.md").read_text()
    listed = {line.split("`")[1] for line in readme.splitlines() if line.startswith("| `") and line.count("|") == 3}
    assert {r.id for r in catalogue()} <= listed
    for rule in catalogue():
        assert f"| `{rule.id}` | {rule.title} |" in readme, f"README's line for {rule.id} is stale"


def test_eager_training_loops_are_host_bound(analysis_of):
    """Self CPU 4-4.5x Self CUDA with the GPU idle two thirds of the window: the GPU waits."""
    for name in ("big_gpt_eager_20steps", "series_linear_train"):
        s = analysis_of(name).summary
        assert s.gpu_busy_share < 0.4 and s.self_cpu_total_us >= 3 * s.self_device_total_us
        assert s.verdict == "overhead-bound", name
    # both in ms, the GPU busy 37%: neither side dominates
    assert analysis_of("seed_mm4096_compile").summary.verdict == "balanced"


def test_copies_are_not_compute(analysis_of):
    s = analysis_of("gpu/pageable_memcpy").summary
    assert s.gpu_busy_share > 0.9 and s.kernel_busy_share == 0.0
    assert s.verdict == "balanced"


def _edited(tmp_path, keep, change=None):
    import gzip
    import json

    from conftest import fixture

    doc = json.loads(gzip.decompress(fixture("seed_mm64_warm").read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if keep(e)]
    for e in doc["traceEvents"]:
        if change:
            change(e)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}


def test_what_the_profiler_did_not_record_is_said(tmp_path):
    from pista.analysis import analyze

    # the launches recorded, their kernels not: the GPU's records were lost (a CPU-only profile records no
    # runtime calls either; tests/test_notices.py has the model that ran on the CPU)
    no_cuda = analyze(_edited(tmp_path, lambda e: e.get("cat") not in GPU_CATS))
    assert no_cuda.summary.verdict == "cpu-only"
    assert any("records were lost" in n for n in no_cuda.notices)
    gpu_only = analyze(_edited(tmp_path, lambda e: e.get("cat") in GPU_CATS or e.get("ph") == "M"))
    assert gpu_only.summary.self_cpu_total_us == 0 and gpu_only.summary.verdict == "balanced"
    assert any(n.startswith("no host (CPU) events") for n in gpu_only.notices)
    no_dur = analyze(_edited(tmp_path, lambda e: True, lambda e: e.pop("dur", None)))
    assert no_dur.summary.verdict == "balanced" and no_dur.finding("overhead-bound") is None
    assert any("zero or missing duration" in n for n in no_dur.notices)
    # a sound trace says none of it
    assert analyze(_edited(tmp_path, lambda e: True)).notices == []


def _restore_everywhere(monkeypatch, name):
    """Put a module constant back after the test, in every loaded pista module that holds it."""
    import sys

    for module in [m for n, m in list(sys.modules.items()) if n.startswith("pista.") and m is not None]:
        if name in vars(module):
            monkeypatch.setattr(module, name, vars(module)[name])


def test_a_threshold_copied_from_another_module_is_set_at_its_source(monkeypatch):
    """Issue 36: 20 advertised thresholds were copies of another module's value, so setting them changed nothing.
    Every one that is a copy (imported, or NAME = module.NAME) is set where it comes from too."""
    from pista.config import _copies_of

    copies = []
    for rule in catalogue():
        for name, value in rule.thresholds.items():
            holder = next(m for m in rule.modules if name in vars(m))
            chain = _copies_of(holder, name)
            if len(chain) > 1 and isinstance(value, (int, float)) and not isinstance(value, bool):
                copies.append((rule.id, name, value, chain[-1]))
    assert ("overhead-bound", "OVERHEAD_RATIO", 3.0, sys.modules["pista.policy"]) in copies
    for rule_id, name, value, home in copies:
        _restore_everywhere(monkeypatch, name)
        apply_thresholds(Config(thresholds={rule_id: {name: value * 2}}))
        assert vars(home)[name] == value * 2, (rule_id, name, home.__name__)
        _restore_everywhere(monkeypatch, name)


def test_setting_the_verdicts_ratio_moves_the_verdict(monkeypatch):
    """OVERHEAD_RATIO = 100000 was accepted and overhead-bound still fired at 43x on seed_mm64_warm."""
    _restore_everywhere(monkeypatch, "OVERHEAD_RATIO")
    trace = str(Path(__file__).parent / "fixtures" / "seed_mm64_warm.json.gz")
    before = analyze(trace)
    apply_thresholds(Config(thresholds={"overhead-bound": {"OVERHEAD_RATIO": 100000.0}}))
    after = analyze(trace)
    assert before.summary.verdict == "overhead-bound" and "overhead-bound" in before.rules_fired
    assert after.summary.verdict != "overhead-bound" and "overhead-bound" not in after.rules_fired
