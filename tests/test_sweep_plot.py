"""The sweep plot (`pista sweep --html`): host and GPU time against size on log axes, crossover marked."""

from __future__ import annotations

import json
import math

import pytest
from conftest import FIXTURES
from test_report import OUTPUT, Page, browser  # noqa: F401  (browser: the session fixture)
from torch_table import parse_table

from pista.render.sweep import crossover, describe, render, verdict_turn


def point(size: int, name: str, verdict: str) -> dict:
    # the totals torch printed for the 64 and 4096 fixtures of the same matmul_add workload
    t = parse_table(FIXTURES / f"{name}.table.txt")
    return {"size": size, "self_cpu_total_us": t.self_cpu_total_us, "self_device_total_us": t.self_device_total_us,
            "verdict": verdict}


REAL = [point(64, "seed_mm64_warm", "overhead-bound"), point(4096, "seed_mm4096_warm", "compute-bound")]
# `pista sweep matmul_add --sizes 64,256,1024,4096` on the H200 (tests/fixtures/gpu/capture_README.md)
H200_SWEEP = json.loads((FIXTURES / "gpu" / "capture_sweep.json").read_text())["points"]


def test_the_caption_follows_the_verdicts_of_the_real_sweep():
    verdicts = {p["size"]: p["verdict"] for p in H200_SWEEP}
    assert verdicts[1024] == "overhead-bound" and verdicts[4096] == "compute-bound"
    # compute-bound at 4096 with Self CUDA still under Self CPU: host and GPU time overlap
    at_4096 = next(p for p in H200_SWEEP if p["size"] == 4096)
    assert at_4096["self_device_total_us"] < at_4096["self_cpu_total_us"]
    before, after = verdict_turn(H200_SWEEP)
    assert (before["size"], after["size"]) == (1024, 4096)
    text = describe(H200_SWEEP)
    assert "turns compute-bound between size 1024 (overhead-bound) and size 4096" in text
    assert "overhead-bound throughout" not in text and "stays under Self CPU total" in text


def test_crossover_interpolates_on_log_axes():
    (p, q) = REAL
    assert p["self_device_total_us"] < p["self_cpu_total_us"] and q["self_device_total_us"] < q["self_cpu_total_us"]
    assert crossover(REAL) is None  # at 4096 the GPU time is still just under the host time
    pts = [{"size": 100, "self_cpu_total_us": 100.0, "self_device_total_us": 10.0, "verdict": "overhead-bound"},
           {"size": 10_000, "self_cpu_total_us": 100.0, "self_device_total_us": 1000.0, "verdict": "compute-bound"}]
    # log(gpu/cpu) goes from -1 to +1 decades over two decades of size: equal at 10^3
    assert crossover(pts) == pytest.approx(1000.0)
    assert crossover(list(reversed(pts))) == pytest.approx(1000.0)
    assert math.isclose(crossover(pts[1:]), 10_000.0)


def test_page_is_self_contained_and_escaped():
    page = render(REAL + [{"size": 8, "self_cpu_total_us": 1.0, "self_device_total_us": 0.5,
                           "verdict": "</script><b>x</b>"}])
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page.split("<script>")[0] and "<b>x</b>" not in page
    assert page.count("<script") == 3


@pytest.mark.browser
@pytest.mark.parametrize("case", ["h200", "crossing"])
def test_sweep_plot_draws(browser, tmp_path, case):  # noqa: F811
    pts = H200_SWEEP if case == "h200" else REAL + [
        {"size": 8192, "self_cpu_total_us": 800.0, "self_device_total_us": 4800.0, "verdict": "compute-bound"}]
    out = tmp_path / "sweep.html"
    out.write_text(render(pts))
    page = Page(browser, out)
    drawn = page.drawn_pixels("#sweep")
    assert drawn["w"] > 400 and drawn["inked"] > 2000
    option = page.page.evaluate("pistaCharts[0].getOption()")
    assert option["xAxis"][0]["type"] == "log" and option["yAxis"][0]["type"] == "log"
    marks = [m["xAxis"] for m in option["series"][0]["markLine"]["data"]]
    assert marks[0] == 4096  # the first compute-bound size
    if case == "crossing":
        assert 4096 < marks[1] < 8192 and marks[1] == pytest.approx(crossover(pts))
    else:
        assert len(marks) == 1  # the curves never cross on the H200 sweep
    caption = page.page.inner_text(".hint")
    assert describe(pts) in caption
    page.assert_clean(out)
    OUTPUT.mkdir(exist_ok=True)
    page.page.screenshot(path=str(OUTPUT / f"sweep_plot_{case}.png"), full_page=True)
    page.page.close()
