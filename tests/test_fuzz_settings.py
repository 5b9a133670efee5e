"""Fuzzing the settings (pyproject.toml's [tool.pista]) and `--peaks` files, beside the trace fuzzers
of tests/test_fuzz.py: tables and values of every TOML kind where the rules' thresholds go, peaks of
every JSON kind, and byte mutations of good files.

The property: the settings or the card come back, or a `PistaError` with a one-line message; and
settings or a card that come back run the rules over real traces to an Analysis, or a one-line
PistaError; never any other exception (a threshold of 0 was ZeroDivisionError, all-zero peaks too).
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from functools import cache
from pathlib import Path

import pytest
from conftest import fixture
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz import assert_one_line, byte_mutations, json_values

from pista import config, efficiency
from pista.analysis import analyze
from pista.errors import PistaError
from pista.render import json as json_render
from pista.rules import catalogue, get_rule
from pista.trace.facts import derive
from pista.trace.load import load_trace

# A CPU trace, a GPU GEMM trace (rated against the card) and one with memory events.
SEEDS = ("seed_mm64_cold", "seed_mm4096_warm", "gpu/memory_leak")
# Budget for the default run: each module below takes a few seconds on one core of a shared runner.
CI = settings(max_examples=150, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@cache
def seed_trace(name: str):
    return load_trace(fixture(name))


@cache
def thresholds() -> tuple[tuple[str, str], ...]:
    return tuple((rule.id, name) for rule in catalogue() for name in rule.thresholds)


# -- TOML text ----------------------------------------------------------------------------------

# Values of every TOML kind, the numbers at their edges: 0, negatives, nan, inf, int64's ends.
toml_scalars = (st.integers(min_value=-(2**63), max_value=2**63 - 1)
                | st.sampled_from([0, 1, -1, 2**53, 2**63 - 1, 0.0, -0.0, 1e-300, 1e300])
                | st.floats(allow_nan=True, allow_infinity=True) | st.booleans() | st.text(max_size=8))
toml_values = st.recursive(toml_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True),
                                             inner, max_size=3), max_leaves=5)


def toml(value: object) -> str:
    """A TOML value's text (inline tables and arrays for the nested kinds)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string, escapes included
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml(v)}" for k, v in value.items()) + "}"  # type: ignore[attr-defined]


# Shapes where a table should be: `tool = 3`, `[tool] pista = 3`, `[tool.pista.rules] host-sync = 3`,
# and nesting deeper than a parser recurses.
_MISPLACED = ("tool = {}\n", "[tool]\npista = {}\n", "[tool.pista.rules]\nhost-sync = {}\n",
              "[tool.pista]\nx = " + "[" * 3000 + "{}" + "]" * 3000 + "\n")


@st.composite
def pyprojects(draw: st.DrawFn) -> str:
    """A pyproject.toml: [tool.pista] keys of any kind, and thresholds (known ones) set to any value,
    the edges most often; a value where a table should be; or a mutated good file."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(_MISPLACED)).format(toml(draw(toml_values)))
    lines = ["[tool.pista]"]
    for key in draw(st.lists(st.sampled_from(["select", "ignore", "fail-on", "other"]), max_size=2, unique=True)):
        lines.append(f"{key} = {toml(draw(toml_values | st.sampled_from(['warning', 'host-sync'])))}")
    for rule_id, name in draw(st.lists(st.sampled_from(thresholds()), max_size=8, unique=True)):
        default = get_rule(rule_id).thresholds[name]
        value = draw(st.sampled_from([default, 0, 0.0, -1, 1, 2**53, 1e-9, float("nan")]) | toml_values)
        lines += [f"[tool.pista.rules.{rule_id}]", f"{name} = {toml(value)}"]
    text = "\n".join(lines) + "\n"
    if draw(st.integers(0, 9)) == 0:
        text = draw(byte_mutations(text.encode())).decode("utf-8", "replace")
    return text


def check_settings(text: str) -> None:
    names = {name for _, name in thresholds()}
    saved = [(module, name, vars(module)[name]) for module in list(sys.modules.values())
             if module is not None and module.__name__.startswith("pista.") for name in names if name in vars(module)]
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "pyproject.toml").write_text(text)
        try:
            chosen = config.load(start=Path(folder))
        except PistaError as err:
            assert_one_line(err)
            return
    try:
        config.apply_thresholds(chosen)
        rules = sorted(chosen.thresholds) or None
        for name in SEEDS:
            analysis = analyze(derive(seed_trace(name)), rules=rules)
            json_render.render(analysis)
    except PistaError as err:
        assert_one_line(err)
    finally:  # every module a setting reaches: the rule's, its shared modules, a copy's source, the text's
        for module, name, value in saved:
            setattr(module, name, value)


@CI
@given(pyprojects())
def test_fuzzed_settings(text):
    check_settings(text)


# -- peaks files --------------------------------------------------------------------------------

GOOD_PEAKS = {"name": "my GPU", "tflops": {"bf16": 989, "tf32": 494, "fp32": 67, "fp64": 67}, "hbm_tbps": 4.8,
              "compute_major": 9, "measured": {"bf16": 757, "hbm": 4.27}}
peak_numbers = st.sampled_from([0, -1, 1e-300, 1e300, 1e7, float("nan"), "989", "x", True, None]) \
    | st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**70), 2**70) | json_values


@st.composite
def peaks_files(draw: st.DrawFn) -> bytes:
    """A peaks file: the good one with its numbers, its tables or its keys swapped for any JSON
    value, or byte mutations of it."""
    doc = json.loads(json.dumps(GOOD_PEAKS))
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(["tflops", "measured", "top"]))
        if where == "top":
            doc[draw(st.sampled_from(["tflops", "measured", "hbm_tbps", "compute_major", "name"]))] = \
                draw(peak_numbers)
        elif isinstance(doc.get(where), dict):
            doc[where][draw(st.sampled_from([*efficiency.DTYPES, "hbm", "other"]))] = draw(peak_numbers)
    data = json.dumps(doc, allow_nan=True).encode()
    return draw(byte_mutations(data)) if draw(st.integers(0, 4)) == 0 else data


def check_peaks(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "peaks.json")
        path.write_bytes(data)
        try:
            card = efficiency.load_peaks(str(path))
        except PistaError as err:
            assert_one_line(err)
            return
    try:
        efficiency.use_peaks(card)
        for name in SEEDS:
            json_render.render(analyze(derive(seed_trace(name))))
    except PistaError as err:
        assert_one_line(err)
    finally:
        efficiency.use_peaks(None)


@CI
@given(peaks_files())
def test_fuzzed_peaks(data):
    check_peaks(data)


@pytest.mark.parametrize("value", [0, 1e-300, 1e7])
def test_peaks_at_their_edges_rate_every_kernel(value):
    # the smallest and largest peaks a file may hold still rate the GEMM trace (no division by 0,
    # no overflow): what the fuzzer's edges hit, each checked here once
    doc = {**GOOD_PEAKS, "tflops": {"bf16": value, "fp32": value}, "hbm_tbps": value or 1.0}
    check_peaks(json.dumps(doc).encode())
