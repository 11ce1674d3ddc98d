/* The charts of /simulator/, drawn with the vendored Chart.js from the JSON the results embed
   (#simulator-data). Every chart's numbers are also in the table beside or below it, so the page
   reads without JavaScript; the results arrive by an htmx swap, so the charts are drawn after each
   swap as well as on load. */
(function () {
  "use strict";

  // Okabe–Ito colours: distinguishable with colour-blindness and in greyscale print.
  var BLUE = "#0072B2", ORANGE = "#E69F00", GREEN = "#009E73", RED = "#D55E00", GREY = "#6c757d";

  function line(label, values, colour, extra) {
    return Object.assign({ label: label, data: values, borderColor: colour, backgroundColor: colour,
                           spanGaps: true }, extra || {});
  }

  function flat(value, count) {
    var out = [];
    for (var i = 0; i < count; i += 1) { out.push(value); }
    return out;
  }

  function rateAxis(data) {
    return { type: "linear", title: { display: true, text: data.x_label || "arrival rate, req/s" } };
  }

  function xy(xs, ys) {
    return xs.map(function (x, i) { return { x: x, y: ys[i] }; });
  }

  function builders(data) {
    var n = data.rates.length;
    function latency(key, title, target) {
      return {
        type: "line",
        data: { datasets: [
          line("p50", xy(data.rates, data[key].p50), BLUE),
          line("p90", xy(data.rates, data[key].p90), ORANGE, { pointStyle: "rectRot" }),
          line("p99", xy(data.rates, data[key].p99), RED, { pointStyle: "triangle" }),
          line("target", xy(data.rates, flat(target, n)), GREY, { borderDash: [6, 4], pointRadius: 0 })
        ] },
        options: { scales: { x: rateAxis(data), y: { type: "logarithmic", title: { display: true, text: title } } } }
      };
    }
    return {
      ttft: function () { return latency("ttft", "TTFT, ms (log scale)", data.targets.ttft_ms); },
      tpot: function () { return latency("tpot", "TPOT, ms (log scale)", data.targets.tpot_ms); },
      goodput: function () {
        return {
          type: "line",
          data: { datasets: [
            line(data.offered_label || "arrival rate", xy(data.rates, data.offered || data.rates), GREY, { borderDash: [6, 4], pointRadius: 0 }),
            line("throughput", xy(data.rates, data.throughput), BLUE),
            line("goodput", xy(data.rates, data.goodput), GREEN, { pointStyle: "rectRot" })
          ] },
          options: { scales: { x: rateAxis(data), y: { beginAtZero: true, title: { display: true, text: "req/s" } } } }
        };
      },
      time: function () {
        var s = data.series;
        return {
          type: "line",
          data: { datasets: [
            line("KV-cache use, %", xy(s.t_s, s.kv), BLUE, { pointRadius: 0, yAxisID: "y" }),
            Object.assign(line("preemptions", xy(s.t_s, s.preemptions), RED, { yAxisID: "y1" }),
                          { type: "bar", maxBarThickness: 6 })
          ] },
          options: { scales: {
            x: { type: "linear", title: { display: true, text: "simulated time, s" } },
            y: { min: 0, max: 100, title: { display: true, text: "KV-cache use, %" } },
            y1: { position: "right", beginAtZero: true, ticks: { precision: 0 }, grid: { drawOnChartArea: false },
                  title: { display: true, text: "preemptions" } }
          } }
        };
      }
    };
  }

  function draw() {
    var source = document.getElementById("simulator-data");
    if (!source || typeof window.Chart === "undefined") { return; }
    var Chart = window.Chart;
    Chart.defaults.animation = false;
    Chart.defaults.maintainAspectRatio = false;
    var make = builders(JSON.parse(source.textContent));
    document.querySelectorAll("canvas[data-sim-chart]").forEach(function (canvas) {
      var existing = Chart.getChart(canvas);
      if (existing) { existing.destroy(); }
      new Chart(canvas, make[canvas.dataset.simChart]());
    });
  }

  document.addEventListener("DOMContentLoaded", draw);
  document.body.addEventListener("htmx:afterSettle", draw);
})();
