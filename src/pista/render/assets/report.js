/* pista report: draws the charts from the JSON in #pista-data with the inlined ECharts build. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("pista-data").textContent);
  var words = data.words || {};
  function w(key) { return Object.prototype.hasOwnProperty.call(words, key) ? words[key] : key; }
  var names = data.names;
  var SEV = { critical: "#c62828", warning: "#e08a00", info: "#1f77b4" };
  var KIND = { cpu: ["#4c78a8", "#72b7b2", "#54a24b", "#9d755d"], gpu: ["#b279a2", "#e45756", "#f58518", "#ff9da6", "#9467bd", "#8c564b"],
               overhead: ["#9aa3ad"] };

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  // three significant digits, as pista.i18n._fmt.sig3 writes them (the page's text does too)
  function sig3(v) {
    var r = Number(v.toPrecision(3)), a = Math.abs(r);
    if (a === 0) return "0";
    if (a >= 100) return v.toFixed(0);
    return r.toFixed(a >= 10 ? 1 : a >= 1 ? 2 : 2 - Math.floor(Math.log10(a)));
  }
  function fmtMs(ms) {
    var us = ms * 1000, a = Math.abs(Number(us.toPrecision(3)));
    if (a >= 1e6) return sig3(us / 1e6) + " s";
    if (a >= 1e3) return sig3(us / 1e3) + " ms";
    if (a >= 1 || a === 0) return sig3(us) + " µs";
    return sig3(us * 1e3) + " ns";
  }
  function fmtUs(us) { return fmtMs(us / 1000); }
  function hash(s) { var h = 0; for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return Math.abs(h); }
  function short(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  var charts = [];
  window.pistaCharts = charts;
  window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });

  // -- timeline ---------------------------------------------------------------------------------
  var tl = data.timeline;
  var FIXED = 2; // row 0: findings, row 1: steps; then the lanes
  function laneLabel(label) { return label.indexOf("thread ") === 0 ? w("thread") + label.slice(6) : label; }
  var cats = [w("pista findings"), w("steps")].concat(tl.rows.map(function (r) {
    return r.label ? short(laneLabel(r.label), 28) : "  · " + w("depth") + " " + r.depth;
  }));
  function items(rc) {
    var out = [];
    for (var i = 0; i < rc.row.length; i++) {
      var row = tl.rows[rc.row[i]];
      var palette = KIND[row.kind] || KIND.overhead;
      var color = row.kind === "cpu" ? palette[row.depth % palette.length] : palette[hash(names[rc.name[i]]) % palette.length];
      out.push({ value: [rc.start[i], rc.end[i], rc.row[i] + FIXED, rc.name[i], rc.count[i]], itemStyle: { color: color } });
    }
    return out;
  }
  // zoomed out: the overview layer (tiny runs merged into blocks); zoomed in: the fine layer
  var layers = { fine: items(tl.rects), overview: items(tl.overview) };
  var layer = "overview";
  var rects = layers[layer];
  var pins = tl.findings.map(function (p) {
    return { value: [p.start, 0, p.finding], itemStyle: { color: SEV[p.severity] || "#555" }, pin: p };
  });
  var spans = tl.findings.filter(function (p) { return p.end > p.start; }).map(function (p) {
    return { value: [p.start, p.end, p.row >= 0 ? p.row + FIXED : 0], itemStyle: { color: SEV[p.severity] || "#555" }, pin: p };
  });
  var firstPin = {};
  tl.findings.forEach(function (p) { if (!(p.finding in firstPin)) firstPin[p.finding] = p; });

  function rectItem(params, api) {
    var y = api.value(2);
    var a = api.coord([api.value(0), y]);
    var b = api.coord([api.value(1), y]);
    var h = api.size([0, 1])[1] * 0.72;
    var shape = echarts.graphic.clipRectByRect(
      { x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 0.6), height: h },
      { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
    return shape && { type: "rect", transition: [], shape: shape, style: api.style() };
  }
  function bandItem(fill, rowsFrom, rowsTo) {
    return function (params, api) {
      var a = api.coord([api.value(0), 0]);
      var b = api.coord([api.value(1), 0]);
      var cs = params.coordSys;
      var top = cs.y, height = cs.height;
      if (rowsFrom) {
        var r0 = api.coord([0, api.value(2) + FIXED])[1], r1 = api.coord([0, api.value(3) + FIXED])[1];
        var half = api.size([0, 1])[1] / 2;
        top = Math.min(r0, r1) - half; height = Math.abs(r1 - r0) + 2 * half;
      }
      var shape = echarts.graphic.clipRectByRect({ x: a[0], y: top, width: Math.max(b[0] - a[0], 1), height: height },
        { x: cs.x, y: cs.y, width: cs.width, height: cs.height });
      return shape && { type: "rect", silent: !rowsFrom, transition: [], shape: shape, style: { fill: fill(params.dataIndex) } };
    };
  }
  function stepLabelItem(params, api) {
    var a = api.coord([api.value(1), 1]), b = api.coord([api.value(2), 1]);
    var h = api.size([0, 1])[1] * 0.72, cs = params.coordSys;
    var shape = echarts.graphic.clipRectByRect({ x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 1), height: h },
      { x: cs.x, y: cs.y, width: cs.width, height: cs.height });
    if (!shape) return null;
    return { type: "group", children: [
      { type: "rect", shape: shape, style: { fill: params.dataIndex % 2 ? "#8d99ae" : "#5c677d" } },
      { type: "text", style: { text: shape.width > 34 ? w("step") + " " + api.value(0) : "", x: shape.x + 4, y: shape.y + h / 2,
        verticalAlign: "middle", fill: "#fff", font: "11px sans-serif" } }] };
  }

  var tlEl = document.getElementById("timeline");
  var tlChart = echarts.init(tlEl, null, { renderer: "canvas" });
  charts.push(tlChart);
  tlEl.style.height = Math.max(300, 80 + cats.length * 30) + "px";
  tlChart.resize();
  var windowSpan = tl.window[1] - tl.window[0];
  tlChart.setOption({
    animation: false,
    grid: { left: 8, right: 24, top: 12, bottom: 64, containLabel: true },
    tooltip: { trigger: "item", confine: true, enterable: false, formatter: function (p) {
      var d = p.data;
      if (p.seriesName === "events") {
        var row = tl.rows[d.value[2] - FIXED];
        var n = d.value[4] > 1 ? d.value[4] + " " + w("events merged, first:") + " " : "";
        return "<b>" + esc(n) + esc(short(names[d.value[3]], 160)) + "</b><br>" + esc(row.lane) +
          "<br>" + w("at") + " +" + fmtMs(d.value[0]) + ", " + fmtMs(d.value[1] - d.value[0]);
      }
      if (p.seriesName === "findings" || p.seriesName === "evidence") {
        var q = d.pin;
        return "<b>" + esc(w(q.severity.toUpperCase())) + " " + esc(q.rule) + "</b><br>" + esc(q.title) + "<br>" +
          esc(short(q.name, 120)) + "<br>" + esc(q.lane) + (q.step != null ? ", " + w("step") + " " + q.step : "") +
          "<br>" + w("at") + " +" + fmtMs(q.start) + (q.end > q.start ? ", " + fmtMs(q.end - q.start) : "") + (q.note ? "<br><i>" + esc(q.note) + "</i>" : "");
      }
      if (p.seriesName === "GPU idle") return w("GPU idle") + " " + fmtMs(d[3] - d[2]) + "<br>" + w("at") + " +" + fmtMs(d[2]);
      if (p.seriesName === "step") return w("step") + " " + d[0] + ": " + fmtMs(d[2] - d[1]);
      return "";
    } },
    xAxis: { type: "value", min: tl.window[0] - windowSpan * 0.005, max: tl.window[1] + windowSpan * 0.005, scale: true,
      axisLabel: { formatter: function (v) { return fmtMs(v); } }, splitLine: { lineStyle: { color: "#eef0f3" } } },
    yAxis: { type: "category", data: cats, inverse: true, axisTick: { show: false },
      axisLabel: { fontSize: 11, color: "#3a4556" }, splitLine: { show: true, lineStyle: { color: "#f0f2f5" } } },
    dataZoom: [{ type: "inside", xAxisIndex: 0, filterMode: "weakFilter" },
               { type: "slider", xAxisIndex: 0, filterMode: "weakFilter", height: 22, bottom: 12,
                 labelFormatter: function (v) { return fmtMs(v); } }],
    series: [
      { type: "custom", name: "step bands", silent: true, z: 0, renderItem: bandItem(function (k) {
          return k % 2 ? "rgba(60,80,120,0.035)" : "rgba(60,80,120,0.085)"; }),
        encode: { x: [0, 1] }, data: tl.stepBands.map(function (s) { return [s[1], s[2]]; }) },
      { type: "custom", name: "dead windows", silent: true, z: 1, renderItem: bandItem(function () { return "rgba(90,90,90,0.18)"; }),
        encode: { x: [0, 1] }, data: tl.dead },
      { type: "custom", name: "GPU idle", z: 2, renderItem: function (params, api) {
          return bandItem(function () { return "rgba(229,57,53,0.11)"; }, true)(params, {
            coord: api.coord, size: api.size, value: function (k) { return api.value([2, 3, 0, 1][k]); } });
        }, encode: { x: [2, 3] }, data: tl.gaps },
      { type: "custom", name: "step", z: 3, renderItem: stepLabelItem, encode: { x: [1, 2], y: 3 }, data: tl.stepBands },
      { type: "custom", id: "events", name: "events", z: 4, renderItem: rectItem, encode: { x: [0, 1], y: 2 }, data: rects },
      { type: "custom", name: "evidence", z: 5, renderItem: function (params, api) {
          var item = rectItem(params, api);
          if (item) { item.style = { fill: "rgba(0,0,0,0)", stroke: api.visual("color"), lineWidth: 2 }; }
          return item;
        }, encode: { x: [0, 1], y: 2 }, data: spans },
      { type: "scatter", name: "findings", z: 6, symbol: "pin", symbolSize: 22, data: pins,
        markLine: { silent: true, symbol: "none", label: { show: false },
          data: Object.keys(firstPin).map(function (k) {
            var p = firstPin[k];
            return { xAxis: p.start, lineStyle: { color: SEV[p.severity] || "#555", type: "dashed", width: 1, opacity: 0.7 } };
          }) } }
    ]
  });
  var note = document.getElementById("timeline-note");
  note.textContent = tl.events.toLocaleString() + " " + w("events on these lanes:") + " " + tl.overview.row.length.toLocaleString() +
    " " + w("blocks zoomed out,") + " " + tl.shown.toLocaleString() + " " + w("rectangles zoomed in (runs of events under a pixel merged") +
    (tl.shown < tl.events ? w("; per row, the longest up to a budget of") + " " + tl.cap.toLocaleString() : "") + ").";

  function pickLayer() {
    var dz = tlChart.getOption().dataZoom[0];
    var lo = dz.startValue, hi = dz.endValue;
    var want = (hi - lo) < windowSpan / tl.overviewSpan ? "fine" : "overview";
    if (want !== layer) {
      layer = want;
      tlChart.setOption({ series: [{ id: "events", data: layers[layer] }] });
    }
    tlEl.setAttribute("data-layer", layer);
  }
  tlChart.on("datazoom", pickLayer);
  tlEl.setAttribute("data-layer", layer);

  function zoomTo(startMs, durMs) {
    var pad = Math.max(durMs * 0.5, windowSpan / 200);
    tlChart.dispatchAction({ type: "dataZoom", dataZoomIndex: 0, startValue: startMs - pad, endValue: startMs + durMs + pad });
    tlEl.scrollIntoView({ behavior: "smooth", block: "center" });
  }
  Array.prototype.forEach.call(document.querySelectorAll("tr.ev"), function (tr) {
    tr.addEventListener("click", function () {
      zoomTo((parseFloat(tr.dataset.start) - tl.origin_us) / 1000, parseFloat(tr.dataset.dur) / 1000);
    });
  });
  tlChart.on("click", function (p) {
    if (p.seriesName === "findings" && p.data && p.data.pin) {
      var card = document.getElementById("finding-" + p.data.pin.finding);
      if (card) card.scrollIntoView({ behavior: "smooth", block: "center" });
    }
  });

  // -- kernel durations -------------------------------------------------------------------------
  var kEl = document.getElementById("kernels");
  if (!data.kernels.length) {
    kEl.outerHTML = '<p class="empty">No kernels in this trace.</p>';
  } else {
    var ks = data.kernels.slice().reverse();
    kEl.style.height = Math.max(260, 70 + ks.length * 28) + "px";
    var kChart = echarts.init(kEl);
    charts.push(kChart);
    kChart.setOption({
      animation: false,
      grid: { left: 8, right: 24, top: 10, bottom: 40, containLabel: true },
      tooltip: { trigger: "item", confine: true, formatter: function (p) {
        var k = ks[p.dataIndex];
        return "<b>" + esc(short(k.name, 160)) + "</b><br>" + k.calls + " " + w("calls") + ", " + w("total") + " " + fmtUs(k.total_us) +
          "<br>" + w("min") + " " + fmtUs(k.box[0]) + " · " + w("median") + " " + fmtUs(k.box[2]) + " · " + w("max") + " " + fmtUs(k.box[4]) +
          "<br>" + w("mean") + " " + fmtUs(k.mean) + ", CV " + sig3(100 * k.cv) + "%" + (k.flagged ? "<br><b>" + esc(w("flagged: kernel-variability")) + "</b>" : "");
      } },
      xAxis: { type: "log", name: "µs", nameLocation: "end", axisLabel: { formatter: function (v) { return fmtUs(v); } },
        splitLine: { lineStyle: { color: "#eef0f3" } } },
      yAxis: { type: "category", data: ks.map(function (k) { return short(k.name, 34) + " ×" + k.calls; }),
        axisLabel: { fontSize: 11, fontFamily: "monospace", color: "#3a4556" } },
      series: [{ type: "boxplot", name: "durations", boxWidth: [6, 16],
        data: ks.map(function (k) {
          return { value: k.box.map(function (v) { return Math.max(v, 0.001); }),
                   itemStyle: { color: k.flagged ? "#ffe0b2" : "#e3e8f4", borderColor: k.flagged ? "#e08a00" : "#3b5bdb" } };
        }) }]
    });
  }

  // -- step widths ------------------------------------------------------------------------------
  var sEl = document.getElementById("steps");
  if (!data.steps.length) {
    sEl.outerHTML = '<p class="empty">' + esc(w("No ProfilerStep regions in this trace (no schedule, or not stepped).")) + '</p>';
  } else {
    var sChart = echarts.init(sEl);
    charts.push(sChart);
    var sorted = data.steps.map(function (s) { return s.ms; }).sort(function (a, b) { return a - b; });
    var median = sorted[Math.floor(sorted.length / 2)];
    var hasBusy = data.steps.some(function (s) { return s.gpu_busy != null; });
    sChart.setOption({
      animation: false,
      grid: { left: 60, right: hasBusy ? 50 : 20, top: 30, bottom: 40 },
      legend: { top: 0, data: hasBusy ? ["step wall time", "GPU busy"] : ["step wall time"], formatter: function (n) { return w(n); } },
      tooltip: { trigger: "axis", formatter: function (ps) {
        var s = data.steps[ps[0].dataIndex];
        return w("step") + " " + s.number + ": " + fmtMs(s.ms) + (s.gpu_busy != null ? "<br>" + w("GPU busy") + " " + sig3(100 * s.gpu_busy) + "%" : "") +
          "<br>" + sig3(s.ms / median) + w("× the median step");
      } },
      xAxis: { type: "category", data: data.steps.map(function (s) { return String(s.number); }) },
      yAxis: [{ type: "value", name: "ms", axisLabel: { formatter: function (v) { return v; } } },
              { type: "value", name: "GPU %", min: 0, max: 100, show: hasBusy, splitLine: { show: false } }],
      series: [
        { type: "bar", name: "step wall time", data: data.steps.map(function (s) {
            return { value: s.ms, itemStyle: { color: s.ms > 1.5 * median ? "#e08a00" : "#4c78a8" } };
          }),
          markLine: { silent: true, symbol: "none", data: [{ yAxis: median, name: "median" }],
            label: { formatter: w("median") + " " + fmtMs(median), position: "insideEndTop" }, lineStyle: { color: "#2e7d32", type: "dashed" } } },
        { type: "line", name: "GPU busy", yAxisIndex: 1, symbolSize: 5, lineStyle: { color: "#b279a2" }, itemStyle: { color: "#b279a2" },
          data: data.steps.map(function (s) { return s.gpu_busy == null ? null : +(100 * s.gpu_busy).toFixed(2); }) }
      ]
    });
  }
  document.body.setAttribute("data-rendered", "1");
})();
