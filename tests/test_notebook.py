"""`pista.analyze(...)` in Jupyter (issue 37, item 5): a real notebook, executed by nbclient on an
ipykernel, profiles a cell with `pista.profile` as a context manager and shows analyses; the HTML
they render is opened in headless Chromium (the report tests' browser)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import fixture
from test_report import browser  # noqa: F401 (the session's one Chromium)

pytest.importorskip("torch")
nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

pytestmark = [pytest.mark.capture, pytest.mark.browser]

TRACE = "gpu/host_sync_item"  # overhead-bound, a top fix and two findings


def run_notebook(tmp_path: Path) -> list:
    """The notebook's cells, executed; each cell's outputs."""
    cells = [
        "import torch, pista",
        # the context manager in a cell: the steps of the loop inside are the profiled ones
        f"with pista.profile({str(tmp_path / 'run')!r}, device='cpu') as p:\n"
        "    a = torch.randn(64, 64)\n"
        "    for _ in range(p.total_steps):\n"
        "        (a @ a).relu().sum()\n"
        "        p.step()",
        "mine = pista.analyze(p)\nmine",
        f"other = pista.analyze({str(fixture(TRACE))!r})\nother",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    # the kernel is this interpreter, with this checkout's pista (PYTHONPATH=src while developing)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env_path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    os.environ["PYTHONPATH"], before = env_path, os.environ.get("PYTHONPATH")
    try:
        client.km = client.kernel_manager_class(kernel_name="python3")
        client.km.kernel_spec.argv[0] = sys.executable  # the kernel runs here, not in another Python
        client.execute()
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = before
    return [c.outputs for c in nb.cells]


def test_an_analysis_renders_itself_in_a_notebook(tmp_path, browser):  # noqa: F811
    from pista.analysis import analyze
    from pista.i18n._fmt import short_figures

    outputs = run_notebook(tmp_path)
    assert not [o for cell in outputs for o in cell if o.get("output_type") == "error"], outputs
    mine, other = (next(o for o in cell if o.get("output_type") == "execute_result")["data"] for cell in outputs[2:])
    # the profiled cell's own analysis: one trace saved where the context manager was told, and shown
    assert (tmp_path / "run" / "trace.json.gz").exists()
    assert "text/html" in mine and "cpu-only" in mine["text/plain"] and "cpu-only" in mine["text/html"]
    expected = analyze(fixture(TRACE))
    assert other["text/plain"] == repr(expected)  # a one-line repr where HTML is not shown
    # the HTML in a page of its own, as the notebook's front end would hold it
    page_path = tmp_path / "cell.html"
    page_path.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body style='background: "
                         f"rgb(1, 2, 3)'><h2 id='host'>a notebook</h2>{other['text/html']}</body></html>")
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(page_path.as_uri())
        text = page.inner_text(".pista-nb")
        with short_figures():
            top = expected.top_fix.fix_here
        assert expected.summary.verdict in text and top in " ".join(text.split())
        for f in expected.findings:
            assert f.title in text and f.rule in text
        rows = page.locator(".pista-nb table.evidence tr.ev").count()
        assert rows == sum(min(len(f.evidence), 8) for f in expected.findings)
        # styled as the report, and only inside its element: the notebook's own page keeps its look
        assert page.evaluate("getComputedStyle(document.querySelector('.pista-nb .verdict')).backgroundColor") \
            == "rgb(198, 40, 40)"  # --crit: overhead-bound
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(1, 2, 3)"
        assert requests == [page_path.as_uri()]  # nothing fetched
    finally:
        page.close()
    assert json.dumps(mine)  # plain data, as a .ipynb stores it
