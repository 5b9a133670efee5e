"""`pista report`: the HTML page, checked in headless Chromium (Debian's /usr/bin/chromium), and the
data behind its charts checked against the raw trace JSON."""

from __future__ import annotations

import atexit
import gzip
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import fixture

from pista.cli import main
from pista.render import html as html_report

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
OUTPUT = Path(__file__).resolve().parent.parent / "test-output"
_SHARED: dict = {}


def raw_events(name: str) -> list[dict]:
    with gzip.open(fixture(name)) as fh:
        return json.load(fh)["traceEvents"]


@pytest.fixture(scope="session")
def browser():
    # one browser for the whole run, even when another test module imports this fixture
    if "browser" not in _SHARED:
        from playwright.sync_api import Error, sync_playwright

        driver = sync_playwright().start()
        try:  # Debian's chromium, else the one `python -m playwright install chromium` puts in ~/.cache
            path = {"executable_path": str(CHROMIUM)} if CHROMIUM.exists() else {}
            _SHARED["browser"] = driver.chromium.launch(**path, args=CHROMIUM_ARGS)
        except Error as err:
            driver.stop()
            if os.environ.get("CI"):
                pytest.fail(f"no Chromium in CI (scripts/test installs it): {err}")
            pytest.skip("no Chromium for the HTML tests: `python -m playwright install chromium` (no root "
                        "needed) or `apt-get install chromium`")

        def stop() -> None:
            _SHARED.pop("browser").close()
            driver.stop()

        atexit.register(stop)
    return _SHARED["browser"]


class Page:
    """A loaded report with what the page said and asked for while loading."""

    def __init__(self, browser, path: Path, width: int = 1400):
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.console: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", self._dialog)
        started = time.perf_counter()
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_selector("body[data-rendered='1']", timeout=30_000)
        self.load_s = time.perf_counter() - started

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def assert_clean(self, own: Path) -> None:
        assert self.errors == []
        assert [c for c in self.console if c.startswith(("error", "warning"))] == []
        assert [u for u in self.requests if u != own.resolve().as_uri()] == []
        assert self.dialogs == []

    def drawn_pixels(self, selector: str) -> dict:
        """Size of the chart's canvas and how many of its pixels are not blank."""
        return self.page.evaluate(
            """(sel) => {
              const c = document.querySelector(sel + ' canvas');
              if (!c) return {w: 0, h: 0, inked: 0};
              const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
              let inked = 0;
              for (let i = 0; i < px.length; i += 4) {
                if (px[i + 3] > 0 && (px[i] < 235 || px[i + 1] < 235 || px[i + 2] < 235)) inked++;
              }
              return {w: c.width, h: c.height, inked};
            }""", selector)


def write_report(tmp_path: Path, trace: Path, name: str = "report.html", *extra: str) -> Path:
    out = tmp_path / name
    assert main(["report", str(trace), "-o", str(out), *extra]) == 0
    return out


# -- in the browser ---------------------------------------------------------------------------


@pytest.mark.browser
def test_report_shows_findings_and_timeline(browser, tmp_path, analysis_of):
    analysis = analysis_of("seed_mm64_warm")
    assert analysis.findings, "overhead-bound fires on the warm 64x64 trace"
    out = write_report(tmp_path, fixture("seed_mm64_warm"))
    page = Page(browser, out)
    for f in analysis.findings:
        assert page.page.get_by_text(f.title, exact=True).first.is_visible()
    assert page.page.locator(".verdict").inner_text() == analysis.summary.verdict
    timeline = page.drawn_pixels("#timeline")
    assert timeline["w"] > 600 and timeline["h"] > 200
    assert timeline["inked"] > 5000
    # the drawn series hold the trace's events and one pin per shown piece of evidence
    counts = page.page.evaluate("""() => {
        const m = pistaCharts[0].getModel();
        const n = (name) => m.getSeriesByName(name)[0].getData().count();
        return {events: n('events'), findings: n('findings')};
    }""")
    assert counts["events"] > 0
    assert counts["findings"] == sum(min(len(f.evidence), html_report.MAX_EVIDENCE_SHOWN)
                                     for f in analysis.findings)
    for chart in ("#kernels", "#steps"):
        drawn = page.drawn_pixels(chart)
        assert drawn["w"] > 200 and drawn["inked"] > 500, chart
    page.assert_clean(out)
    OUTPUT.mkdir(exist_ok=True)
    page.page.screenshot(path=str(OUTPUT / "report_seed_mm64_warm.png"), full_page=True)
    # clicking an evidence row zooms the timeline onto it
    page.page.locator("tr.ev").first.click()
    page.page.wait_for_timeout(200)
    zoom = page.page.evaluate("pistaCharts[0].getOption().dataZoom[0]")
    first = analysis.findings[0].evidence[0]
    at_ms = (first.ts_us - page.page.evaluate("JSON.parse(document.getElementById('pista-data').textContent)"
                                              ".timeline.origin_us")) / 1000
    assert zoom["startValue"] <= at_ms and at_ms + first.dur_us / 1000 <= zoom["endValue"]
    assert zoom["endValue"] - zoom["startValue"] < 0.8 * analysis.summary.window_us / 1000
    page.page.close()


@pytest.mark.browser
def test_the_spanish_report_reads_in_spanish(browser, tmp_path, analysis_of):
    from pista.i18n import localize, words
    from pista.i18n._fmt import short_figures

    analysis = analysis_of("seed_mm64_cold")
    with short_figures():  # the report's figures for people: three significant digits (issue 37)
        spanish = localize(analysis, "es")
    out = write_report(tmp_path, fixture("seed_mm64_cold"), "report_es.html", "--lang", "es")
    page = Page(browser, out)
    headings = page.page.locator("h2").all_inner_texts()
    assert headings == ["Línea de tiempo", "Hallazgos", "Duración de los kernels", "Anchura de los pasos",
                        "Tabla key_averages reconstruida"]
    first = page.page.locator("article.finding").first
    assert first.locator("h3").inner_text() == spanish.findings[0].title
    assert first.locator(".sev").inner_text().lower() == words("es")[analysis.findings[0].severity.value]
    assert first.locator(".advice b").inner_text() == "Solución:"
    header = first.locator("table.evidence th").all_inner_texts()
    assert header == ["evidencia", "carril", "paso", "en", "dur", "nota"]
    # each shown note is the Spanish one for what the rule wrote, not the English text
    notes = first.locator("table.evidence tr.ev td:last-child").all_inner_texts()
    english = [e.note for e in analysis.findings[0].evidence[: len(notes)]]
    with short_figures():
        spanish_notes = [e.note for e in spanish.findings[0].evidence[: len(notes)]]
    assert [n.split(" en ")[0] if " en " in n else n for n in notes] != english
    assert all(n.startswith(s) for n, s in zip(notes, spanish_notes, strict=True)), (notes, spanish_notes)
    lanes = first.locator("table.evidence tr.ev td:nth-child(2)").all_inner_texts()
    assert any(lane.startswith("hilo ") for lane in lanes) and not any(lane.startswith("thread ") for lane in lanes)
    legend = page.page.evaluate("pistaCharts[2].getOption().legend[0].formatter('step wall time')")
    assert legend == "tiempo de pared del paso"
    page.assert_clean(out)
    OUTPUT.mkdir(exist_ok=True)
    page.page.screenshot(path=str(OUTPUT / "report_seed_mm64_cold_es.png"), full_page=True)
    page.page.close()


@pytest.mark.browser
def test_names_from_the_trace_are_text_not_markup(browser, tmp_path):
    evil = "<script>alert(1)</script>"
    events = raw_events("seed_mm64_warm")
    kernel = next(e["name"] for e in events if e.get("cat") == "kernel")
    for e in events:
        if e.get("name") == kernel:
            e["name"] = evil
    with gzip.open(fixture("seed_mm64_warm")) as fh:
        doc = json.load(fh)
    doc["traceEvents"] = events
    trace = tmp_path / "evil.json.gz"
    trace.write_bytes(gzip.compress(json.dumps(doc).encode()))
    out = write_report(tmp_path, trace)
    text = out.read_text()
    assert evil not in text and "alert(1)</script" not in text
    page = Page(browser, out)
    assert page.page.get_by_text(evil, exact=True).first.is_visible()
    # hovering the renamed kernel's box shows its name in the tooltip, still as text
    page.page.locator("#kernels").hover()
    page.assert_clean(out)
    assert page.page.evaluate("document.querySelectorAll('script').length") == 3
    page.page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_big_trace_stays_usable(browser, tmp_path):
    started = time.perf_counter()
    out = write_report(tmp_path, fixture("big_gpt_eager_20steps"), "big.html")
    render_s = time.perf_counter() - started
    size_mb = out.stat().st_size / 1e6
    page = Page(browser, out)
    shown = page.page.evaluate("pistaCharts[0].getModel().getSeriesByName('events')[0].getData().count()")
    print(f"big report: {size_mb:.2f} MB, pista report {render_s:.2f} s, browser load {page.load_s:.2f} s, "
          f"{shown} rectangles")
    assert shown <= html_report.MAX_OVERVIEW_RECTS
    # zoomed in to one step, the fine layer is drawn instead, every GPU kernel of that step in it
    data = page.page.evaluate("JSON.parse(document.getElementById('pista-data').textContent).timeline")
    number, start, end = data["stepBands"][5]
    page.page.evaluate(f"pistaCharts[0].dispatchAction({{type: 'dataZoom', dataZoomIndex: 0, "
                       f"startValue: {start}, endValue: {end}}})")
    page.page.wait_for_timeout(300)
    assert page.page.locator("#timeline").get_attribute("data-layer") == "fine"
    fine = page.page.evaluate("pistaCharts[0].getOption().series.find(s => s.id === 'events').data.length")
    assert fine == len(data["rects"]["row"]) <= html_report.MAX_RECTS
    gpu_rows = {i for i, r in enumerate(data["rows"]) if r["kind"] == "gpu"}
    drawn = sum(c for r, s, c in zip(data["rects"]["row"], data["rects"]["start"], data["rects"]["count"],
                                     strict=True) if r in gpu_rows and start <= s < end)
    on_gpu = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")
    kernels = sum(1 for e in raw_events("big_gpt_eager_20steps") if e.get("cat") in on_gpu and e.get("ph") == "X"
                  and start <= round((e["ts"] - data["origin_us"]) / 1000, 4) < end)
    assert drawn == kernels, (number, drawn, kernels)
    page.page.screenshot(path=str(OUTPUT / "report_big_gpt_step.png"))
    assert size_mb < 3.0
    assert page.load_s < 15
    assert page.drawn_pixels("#timeline")["inked"] > 20_000
    page.assert_clean(out)
    OUTPUT.mkdir(exist_ok=True)
    page.page.screenshot(path=str(OUTPUT / "report_big_gpt.png"), full_page=True)
    page.page.close()


# -- the data behind the charts ---------------------------------------------------------------


def test_script_json_cannot_close_the_script():
    text = html_report.script_json({"name": "</script><script>alert(1)</script>", "x": "a\u2028b & <!--"})
    assert "</" not in text and "<!--" not in text and "\u2028" not in text
    assert json.loads(text) == {"name": "</script><script>alert(1)</script>", "x": "a\u2028b & <!--"}


def test_merge_tiny_keeps_wide_events_and_merges_runs():
    start = np.array([0, 10, 20, 100, 300, 1000], dtype=np.int64)
    end = np.array([5, 15, 25, 250, 305, 1005], dtype=np.int64)
    name = np.arange(6)
    s, e, n, c = html_report._merge_tiny(start, end, name, min_ns=10)
    # 0..25: three 5 ns events 5 ns apart -> one; the 150 ns event alone; 300 and 1000 stay apart
    assert s.tolist() == [0, 100, 300, 1000]
    assert e.tolist() == [25, 250, 305, 1005]
    assert c.tolist() == [3, 1, 1, 1]
    assert n.tolist() == [0, 3, 4, 5]


def test_timeline_covers_every_lane_and_caps_rectangles(load_facts):
    from pista.analysis import analyze

    facts = load_facts("big_gpt_eager_20steps")
    data = html_report.report_data(analyze(facts))
    tl = data["timeline"]
    assert len(tl["rects"]["row"]) <= html_report.MAX_RECTS
    lanes = {r["lane"] for r in tl["rows"]}
    assert {lane.label for lane in facts.lanes if lane.kind in ("cpu", "gpu")} <= lanes
    # each of the 20 ProfilerStep regions is a band, at its own start (µs in the file -> ms here)
    step_events = sorted((e for e in raw_events("big_gpt_eager_20steps")
                          if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")),
                         key=lambda e: e["ts"])
    assert [b[0] for b in tl["stepBands"]] == [int(e["name"].split("#")[1]) for e in step_events]
    origin_us = tl["origin_us"]
    for band, e in zip(tl["stepBands"], step_events, strict=True):
        assert band[1] == pytest.approx((e["ts"] - origin_us) / 1000, abs=1e-5)
        assert band[2] - band[1] == pytest.approx(e["dur"] / 1000, abs=1e-5)


def test_kernel_distributions_match_the_raw_durations(analysis_of):
    data = html_report.report_data(analysis_of("big_gpt_eager_20steps"))
    by_name: dict[str, list[float]] = {}
    for e in raw_events("big_gpt_eager_20steps"):
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            by_name.setdefault(e["name"], []).append(e["dur"])
    totals = sorted(((sum(v), k) for k, v in by_name.items() if len(v) >= 2), reverse=True)
    shown = {k["name"]: k for k in data["kernels"]}
    assert totals[0][1] in shown  # the kernel with the most GPU time is drawn
    for name, k in shown.items():
        durs = np.array(by_name[name])
        assert k["calls"] == durs.size
        assert k["box"] == pytest.approx(np.quantile(durs, [0, 0.25, 0.5, 0.75, 1]).tolist(), abs=2e-3)


def test_step_widths_show_the_cold_first_step(analysis_of):
    # seed_mm64_cold was profiled with no warm-up at all: its first step pays the lazy loading
    steps = html_report.report_data(analysis_of("seed_mm64_cold"))["steps"]
    raw = sorted((e for e in raw_events("seed_mm64_cold")
                  if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")), key=lambda e: e["ts"])
    assert [s["ms"] for s in steps] == pytest.approx([e["dur"] / 1000 for e in raw], abs=1e-5)
    assert steps[0]["ms"] > 2 * max(s["ms"] for s in steps[1:])


def test_pins_sit_at_the_evidence(analysis_of):
    analysis = analysis_of("seed_mm64_warm")
    tl = html_report.report_data(analysis)["timeline"]
    origin_us = tl["origin_us"]
    expected = [(f.rule, (e.ts_us - origin_us) / 1000) for f in analysis.findings
                for e in f.evidence[: html_report.MAX_EVIDENCE_SHOWN]]
    assert [(p["rule"], p["start"]) for p in tl["findings"]] == [(r, pytest.approx(t, abs=1e-6)) for r, t in expected]


def test_report_refuses_to_overwrite_its_input(tmp_path, capsys):
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(fixture("seed_mm64_warm").read_bytes())
    before = trace.read_bytes()
    assert main(["report", str(trace), "-o", str(trace)]) == 2
    assert trace.read_bytes() == before
    assert "refusing to overwrite" in capsys.readouterr().err


@pytest.mark.browser
def test_report_on_a_cpu_only_trace(browser, tmp_path):
    out = write_report(tmp_path, fixture("gpu/cpu_only"))
    page = Page(browser, out)
    assert page.page.locator(".verdict").inner_text() == "cpu-only"
    assert page.page.get_by_text("No kernels in this trace.").is_visible()
    assert page.drawn_pixels("#timeline")["inked"] > 1000
    page.assert_clean(out)
    page.page.close()


def test_the_variable_kernel_is_flagged_in_the_distributions(analysis_of):
    # the fixture's script runs one elementwise kernel while a GEMM competes on another stream
    analysis = analysis_of("gpu/kernel_variability")
    finding = analysis.finding("kernel-variability")
    assert finding is not None
    kernels = html_report.report_data(analysis)["kernels"]
    flagged = [k for k in kernels if k["flagged"]]
    assert [k["name"] for k in flagged] == [finding.metrics["name"]]
    box = flagged[0]["box"]
    assert box[0] == pytest.approx(finding.metrics["min_us"], abs=1e-3)
    assert box[4] == pytest.approx(finding.metrics["max_us"], abs=1e-3)
