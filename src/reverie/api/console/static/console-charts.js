// The console's one chart script: draws every <div class="chart" data-chart="{spec}"> with uPlot after each
// swap (idempotent: a drawn chart is marked), keeps the plots as wide as their box, and downloads the
// CSV export links (<a data-csv download>) with the key in a header, never in the URL.
// spec = {"title": str, "x": [unix seconds], "series": [{"label": str, "values": [number | null]}]}
(function () {
  "use strict";
  var COLORS = ["#0b5cad", "#b5470b", "#1d6b35", "#7a3fa0", "#a4161a", "#0f7c86", "#8a5a00", "#4a5360"];
  var drawn = [];

  function yRange(u, min, max) {
    // A series that is all zero (destroyed outside the purge, as it should be) is a flat line at 0, in view.
    if (min === null || max === null) { return [0, 1]; }
    var low = Math.min(0, min);
    if (max <= low) { return [low, low + 1]; }
    return [low, max + (max - low) * 0.1];
  }

  function options(spec, width) {
    var series = [{}];
    spec.series.forEach(function (s, i) {
      series.push({
        label: s.label,
        stroke: COLORS[i % COLORS.length],
        width: 2,
        points: { show: spec.x.length < 40, size: 6 },
        spanGaps: false,
      });
    });
    return {
      width: width,
      height: 200,
      series: series,
      scales: { x: { time: true }, y: { range: yRange } },
      axes: [{ stroke: "#4a5360" }, { stroke: "#4a5360", size: 56 }],
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
    };
  }

  function draw(el) {
    if (el.getAttribute("data-drawn") === "1" || typeof uPlot === "undefined") { return; }
    var spec;
    try { spec = JSON.parse(el.getAttribute("data-chart")); } catch (e) { return; }
    if (!spec || !spec.x || !spec.series || !spec.series.length) { return; }
    el.setAttribute("data-drawn", "1");
    var data = [spec.x];
    spec.series.forEach(function (s) { data.push(s.values); });
    var width = Math.max(240, el.clientWidth || 320);
    var plot = new uPlot(options(spec, width), data, el);
    drawn.push({ el: el, plot: plot });
  }

  function drawAll() {
    drawn = drawn.filter(function (d) { return document.body.contains(d.el); });
    document.querySelectorAll(".chart[data-chart]").forEach(draw);
  }

  function resize() {
    drawn.forEach(function (d) {
      var width = Math.max(240, d.el.clientWidth || 320);
      if (Math.abs(width - d.plot.width) > 4) { d.plot.setSize({ width: width, height: 200 }); }
    });
  }

  function saveCsv(link) {
    var name = link.getAttribute("download") || "reverie-usage.csv";
    return window.reverieFetch(link.getAttribute("href"), { headers: { Accept: "text/csv" } }).then(function (r) {
      if (!r.ok) { throw new Error("The server answered " + r.status + "."); }
      return r.blob();
    }).then(function (blob) {
      var url = URL.createObjectURL(blob);
      var save = document.createElement("a");
      save.href = url; save.download = name; save.hidden = true;
      document.body.appendChild(save);
      save.click();
      save.remove();
      setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
    });
  }

  function onClick(event) {
    var link = event.target.closest && event.target.closest("a[data-csv]");
    if (!link || event.defaultPrevented) { return; }
    event.preventDefault();
    link.setAttribute("aria-busy", "true");
    saveCsv(link).catch(function (error) {
      var box = document.getElementById("flash");
      if (box) { box.textContent = error.message; box.hidden = false; }
    }).then(function () { link.removeAttribute("aria-busy"); });
  }

  var pending = null;
  document.addEventListener("DOMContentLoaded", function () {
    document.addEventListener("click", onClick);
    document.body.addEventListener("htmx:afterSettle", drawAll);
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(resize, 150);
    });
    drawAll();
  });
}());
