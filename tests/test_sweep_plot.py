"""The sweep plot (`pista sweep --html`): host and GPU time against size on log axes, crossover marked."""

from __future__ import annotations

import math

import pytest
from conftest import FIXTURES
from test_report import OUTPUT, Page, browser  # noqa: F401  (browser: the session fixture)
from torch_table import parse_table

from pista.render.sweep import crossover, render


def point(size: int, name: str, verdict: str) -> dict:
    # the totals torch printed for the 64 and 4096 fixtures of the same matmul_add workload
    t = parse_table(FIXTURES / f"{name}.table.txt")
    return {"size": size, "self_cpu_total_us": t.self_cpu_total_us, "self_device_total_us": t.self_device_total_us,
            "verdict": verdict}


REAL = [point(64, "seed_mm64_warm", "overhead-bound"), point(4096, "seed_mm4096_warm", "compute-bound")]


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
def test_sweep_plot_draws(browser, tmp_path):  # noqa: F811
    pts = REAL + [{"size": 8192, "self_cpu_total_us": 800.0, "self_device_total_us": 4800.0,
                   "verdict": "compute-bound"}]
    out = tmp_path / "sweep.html"
    out.write_text(render(pts))
    page = Page(browser, out)
    drawn = page.drawn_pixels("#sweep")
    assert drawn["w"] > 400 and drawn["inked"] > 2000
    option = page.page.evaluate("pistaCharts[0].getOption()")
    assert option["xAxis"][0]["type"] == "log" and option["yAxis"][0]["type"] == "log"
    marked = option["series"][0]["markLine"]["data"][0]["xAxis"]
    assert 4096 < marked < 8192 and marked == pytest.approx(crossover(pts))
    page.assert_clean(out)
    OUTPUT.mkdir(exist_ok=True)
    page.page.screenshot(path=str(OUTPUT / "sweep_plot.png"), full_page=True)
    page.page.close()
