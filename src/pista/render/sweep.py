"""A sweep's plot: Self CPU and Self CUDA totals against the workload size (log axes), each point
coloured by its verdict, the size where the verdict turns compute-bound marked, and the crossover
(where the GPU time catches up with the host time) too where the curves cross. The two differ: the
verdict follows how busy the GPU is, and host time overlaps GPU time, so a run can be compute-bound
while its Self CUDA total is still under its Self CPU total (matmul_add at 4096 on an H200).
One self-contained HTML page with the inlined ECharts build."""

from __future__ import annotations

import html
import math
from typing import Any

from pista.i18n._fmt import sig3
from pista.render.html import _asset, script_json

VERDICT_COLOR = {"overhead-bound": "#c62828", "compute-bound": "#2e7d32", "balanced": "#e08a00",
                 "input-bound": "#8e24aa", "start-up": "#00838f",
                 "cpu-only": "#1f77b4"}


def crossover(points: list[dict[str, Any]]) -> float | None:
    """The size where Self CUDA total first reaches Self CPU total, interpolated on log-log axes
    between the two sizes that straddle it; None if the curves never cross."""
    pts = sorted(points, key=lambda p: p["size"])
    for p, q in zip(pts, pts[1:], strict=False):
        d0 = math.log(max(p["self_device_total_us"], 1e-9)) - math.log(max(p["self_cpu_total_us"], 1e-9))
        d1 = math.log(max(q["self_device_total_us"], 1e-9)) - math.log(max(q["self_cpu_total_us"], 1e-9))
        if d0 < 0 <= d1:
            t = -d0 / (d1 - d0)
            return math.exp(math.log(p["size"]) + t * (math.log(q["size"]) - math.log(p["size"])))
    if pts and pts[0]["self_device_total_us"] >= pts[0]["self_cpu_total_us"]:
        return float(pts[0]["size"])
    return None


def verdict_turn(points: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The two neighbouring sizes between which the verdict turns compute-bound, or None."""
    pts = sorted(points, key=lambda p: p["size"])
    for before, after in zip(pts, pts[1:], strict=False):
        if before["verdict"] != "compute-bound" and after["verdict"] == "compute-bound":
            return before, after
    return None


def describe(points: list[dict[str, Any]]) -> str:
    """One or two sentences on where the run turns compute-bound and where the curves cross."""
    pts = sorted(points, key=lambda p: p["size"])
    if not pts:
        return "No size completed."
    return f"{_turn_sentence(pts)} {_crossing_sentence(pts)}"


def _turn_sentence(pts: list[dict[str, Any]]) -> str:
    """Where the verdict turns compute-bound (the points by size)."""
    turn = verdict_turn(pts)
    if turn is not None:
        before, after = turn
        return (f"The verdict turns compute-bound between size {before['size']} ({before['verdict']}) and "
                f"size {after['size']}.")
    if pts[0]["verdict"] == "compute-bound":
        return f"Compute-bound already at size {pts[0]['size']}."
    verdicts = sorted({p["verdict"] for p in pts})
    return f"It does not turn compute-bound up to size {pts[-1]['size']} ({', '.join(verdicts)})."


def _crossing_sentence(pts: list[dict[str, Any]]) -> str:
    """Where Self CUDA total catches up with Self CPU total (the points by size)."""
    cross = crossover(pts)
    if cross is not None:
        return f"Self CUDA total catches up with Self CPU total near size {cross:.0f}."
    if any(p["verdict"] == "compute-bound" for p in pts):
        return ("Self CUDA total stays under Self CPU total at every size: the host's time overlaps the "
                "GPU's, and the verdict follows how busy the GPU is.")
    return "Self CUDA total stays under Self CPU total at every size."


def render(points: list[dict[str, Any]], title: str = "pista sweep") -> str:
    pts = sorted(points, key=lambda p: p["size"])
    turn = verdict_turn(pts)
    data: dict[str, Any]  # the page's JSON
    data = {"points": [{"size": int(p["size"]), "cpu": float(p["self_cpu_total_us"]),
                        "gpu": float(p["self_device_total_us"]), "verdict": str(p["verdict"])} for p in pts],
            "crossover": crossover(pts), "turn": None if turn is None else int(turn[1]["size"]),
            "colors": VERDICT_COLOR}
    rows = "".join(
        f"<tr><td class='num'>{p['size']}</td><td class='num'>{sig3(p['cpu'])}</td><td class='num'>{sig3(p['gpu'])}</td>"
        f"<td><span class='chip' style='background:{VERDICT_COLOR.get(p['verdict'], '#5f6b7a')}'>"
        f"{html.escape(p['verdict'])}</span></td></tr>" for p in data["points"])
    return _PAGE.format(title=html.escape(title), css=_asset("report.css"), note=html.escape(describe(pts)),
                        rows=rows, data=script_json(data), echarts=_asset("echarts.pista.min.js"), js=_JS)


_JS = """
(function () {
  var d = JSON.parse(document.getElementById('pista-data').textContent);
  var el = document.getElementById('sweep');
  var chart = echarts.init(el);
  window.pistaCharts = [chart];
  function pts(key) { return d.points.map(function (p) { return { value: [p.size, Math.max(p[key], 1e-3)],
    itemStyle: { color: d.colors[p.verdict] || '#5f6b7a' }, verdict: p.verdict }; }); }
  var lines = [];
  if (d.turn != null) lines.push({ xAxis: d.turn, label: { formatter: 'compute-bound from ' + d.turn,
    position: 'insideEndTop' }, lineStyle: { color: '#2e7d32', type: 'solid', width: 2 } });
  if (d.crossover != null) lines.push({ xAxis: d.crossover, label: { formatter: 'crossover ~' +
    Math.round(d.crossover), position: 'insideEndBottom' }, lineStyle: { color: '#1d2330', type: 'dashed' } });
  var mark = lines.length ? { silent: true, symbol: 'none', data: lines } : undefined;
  chart.setOption({
    animation: false,
    legend: { top: 0 },
    grid: { left: 70, right: 30, top: 40, bottom: 50 },
    tooltip: { trigger: 'item', formatter: function (p) {
      return p.seriesName + '<br>size ' + p.value[0] + ': ' + p.value[1].toFixed(3) + ' µs<br>' +
        String(p.data.verdict).replace(/[&<>]/g, ''); } },
    xAxis: { type: 'log', name: 'size', nameLocation: 'middle', nameGap: 28, logBase: 2 },
    yAxis: { type: 'log', name: 'µs' },
    series: [
      { name: 'Self CPU total', type: 'line', symbolSize: 11, lineStyle: { color: '#4c78a8', width: 2.5 },
        color: '#4c78a8', data: pts('cpu'), markLine: mark },
      { name: 'Self CUDA total', type: 'line', symbolSize: 11, symbol: 'diamond', lineStyle: { color: '#b279a2', width: 2.5 },
        color: '#b279a2', data: pts('gpu') }
    ]
  });
  window.addEventListener('resize', function () { chart.resize(); });
  document.body.setAttribute('data-rendered', '1');
})();
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'">
<style>{css}</style></head><body>
<header class="top"><div class="brand">pista</div><h1>{title}</h1></header>
<main><section class="card"><h2>Host time and GPU time against size</h2><p class="hint">{note}
Point colours: the verdict at that size.</p><div id="sweep" class="chart"></div></section>
<section class="card"><table class="kavg"><thead><tr><th>size</th><th>Self CPU total (µs)</th>
<th>Self CUDA total (µs)</th><th>verdict</th></tr></thead><tbody>{rows}</tbody></table></section></main>
<script id="pista-data" type="application/json">{data}</script>
<script>{echarts}</script>
<script>{js}</script>
</body></html>
"""
