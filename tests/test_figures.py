"""Figures for people: three significant digits and one spelling of each unit in every output but
JSON (issue 37, item 3); the JSON and `pista table` (torch's own table, byte for byte) keep theirs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import FIXTURES, fixture

PISTA = [sys.executable, "-m", "pista"]
# a number with its unit: a duration, a percentage, a rate
FIGURE = re.compile(r"(?<![\w.#+-])[-+]?(\d+(?:\.\d+)?) ?(ns|µs|ms|s|%|TB/s|GB/s|TFLOP/s|MiB|MB)(?!\w)")


def significant(number: str) -> int:
    """How many significant digits a written number shows ('0.0413' 3, '41.30' 4, '138' 3)."""
    digits = number.replace(".", "").lstrip("0")
    return len(digits) if "." in number else len(digits.rstrip("0") or "0")


def assert_short_figures(text: str) -> int:
    """Every figure with a unit in `text` shows at most three significant digits (a whole number of more
    digits is left whole: 5290%); no duration is spelled 'us'. How many figures there were."""
    figures = FIGURE.findall(text)
    for number, unit in figures:
        if "." in number:
            assert significant(number) <= 3, f"{number} {unit}"
    assert not re.search(r"\d ?us\b", text), re.search(r".{40}\d ?us\b.{10}", text)
    return len(figures)


def run(*args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run([*PISTA, *args], capture_output=True, text=True, timeout=300, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr  # check exits 1 on its findings
    return proc.stdout


def torch_total(name: str, which: str) -> float:
    """The total torch printed under its own table for this trace, in µs ('Self CPU time total: 729.377us')."""
    text = (FIXTURES / f"{name}.table.txt").read_text()
    value, unit = re.search(rf"{which} time total: ([\d.]+)(us|ms|s)", text).groups()
    return float(value) * {"us": 1.0, "ms": 1e3, "s": 1e6}[unit]


def sig3(us: float) -> str:
    """The test's own three-significant-digit duration, to compare with pista's."""
    for unit, scale in (("s", 1e6), ("ms", 1e3), ("µs", 1.0)):
        if abs(float(f"{us:.3g}")) >= scale:
            value = float(f"{us / scale:.3g}")
            return f"{value:.{max(0, 2 - len(str(int(abs(value)))) + 1)}f} {unit}"
    return f"{us * 1e3:.3g} ns"


@pytest.mark.parametrize("name", ["seed_mm4096_warm", "gpu/host_sync_item", "series_mlp_eager"])
def test_analyze_text_has_three_significant_digits(name):
    trace = str(fixture(name))
    for args in (["analyze", trace], ["analyze", trace, "-v"]):
        text = run(*args)
        assert assert_short_figures(text) > 10
        # the totals torch printed for this run, rounded independently
        assert f"Self CPU total {sig3(torch_total(name, 'Self CPU'))}" in text
        assert f"Self CUDA total {sig3(torch_total(name, 'Self CUDA'))}" in text


def test_every_verb_for_people_writes_short_figures(tmp_path):
    a, b = str(fixture("seed_mm64_warm")), str(fixture("seed_mm4096_warm"))
    outputs = {
        "check": run("check", b),
        "check markdown": run("check", b, "--format", "markdown"),
        "diff": run("diff", a, b),
        "whatif": run("whatif", b, "--scale-kernels", "nvjet=0.5"),
        "ranks": run("analyze", str(FIXTURES / "gloo" / "straggler_2"), "--workers", "1"),
        "cycles": run("analyze", str(FIXTURES / "tensorboard_cycles")),
    }
    run("report", b, "-o", str(tmp_path / "r.html"))
    outputs["report"] = visible_text((tmp_path / "r.html").read_text())
    run("diff", a, b, "--format", "html", "-o", str(tmp_path / "d.html"))
    outputs["diff html"] = visible_text((tmp_path / "d.html").read_text())
    for verb, text in outputs.items():
        assert assert_short_figures(text) >= 2, verb
    assert f"Self CPU total {sig3(torch_total('seed_mm4096_warm', 'Self CPU'))}" in outputs["report"]


def test_json_and_pista_table_keep_every_digit():
    # the JSON is a contract: its text keeps three decimals; `pista table` is torch's table, byte for byte
    name = "seed_mm4096_warm"
    doc = json.loads(run("analyze", str(fixture(name)), "--format", "json"))
    assert any(re.search(r"\d+\.\d{3} µs", f["message"]) for f in doc["findings"])
    table = run("table", str(fixture(name)))
    torch = (FIXTURES / f"{name}.table.txt").read_text()
    assert table.splitlines()[-2:] == torch.splitlines()[-2:]  # 'Self CPU time total: 729.377us', as torch wrote
    assert table.splitlines()[:3] == torch.splitlines()[:3]  # its header, padding and all


def test_significant_digits_of_the_formatter():
    from pista.i18n._fmt import short_figures, t

    with short_figures():
        assert [t(v) for v in (0.0413, 41.301, 99.96, 999.96, 137674.662, 1234567.0)] == \
            ["41.3 ns", "41.3 µs", "100 µs", "1.00 ms", "138 ms", "1.23 s"]
    assert t(41.301) == "41.301 µs"  # outside: as the JSON writes it


class _Visible(HTMLParser):
    """A page's text as a reader sees it: no script, no style."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def visible_text(page: str) -> str:
    parser = _Visible()
    parser.feed(page)
    return " ".join(" ".join(parser.parts).split())
