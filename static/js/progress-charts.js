/* The charts of /progress/, drawn with the vendored Chart.js from the JSON the page embeds
   (#progress-data). Each chart's numbers are also in the table beside it, so the page reads
   without JavaScript and in print; charts are redrawn at print size before printing. */
(function () {
  "use strict";

  var source = document.getElementById("progress-data");
  if (!source || typeof window.Chart === "undefined") {
    return;
  }
  var data = JSON.parse(source.textContent);
  var Chart = window.Chart;

  // Okabe–Ito colours: distinguishable with colour-blindness and in greyscale print.
  var BLUE = "#0072B2", ORANGE = "#E69F00", GREEN = "#009E73", RED = "#D55E00", GREY = "#6c757d";

  Chart.defaults.animation = false;
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.color = "#343a40";
  Chart.defaults.maintainAspectRatio = false;

  function dayLabel(iso) {
    var parts = iso.split("-");
    var day = new Date(Number(parts[0]), Number(parts[1]) - 1, Number(parts[2]));
    return day.toLocaleDateString(undefined, { day: "numeric", month: "short" });
  }

  function hasData(values) {
    return values.some(function (v) { return v !== null && v !== 0; });
  }

  function percentAxis(extra) {
    return Object.assign({ min: 0, max: 100, ticks: { callback: function (v) { return v + " %"; } } }, extra || {});
  }

  function countAxis() {
    return { beginAtZero: true, ticks: { precision: 0 } };
  }

  function percentTooltip() {
    return { callbacks: { label: function (ctx) {
      return ctx.dataset.label + ": " + (ctx.parsed.y === null ? "—" : ctx.formattedValue + " %");
    } } };
  }

  var charts = {
    recall: function () {
      if (!hasData(data.recall) && !hasData(data.accuracy)) { return null; }
      return {
        type: "line",
        data: { labels: data.days.map(dayLabel), datasets: [
          { label: "Recall", data: data.recall, borderColor: BLUE, backgroundColor: BLUE, spanGaps: true },
          { label: "Predicted", data: data.predicted, borderColor: GREY, backgroundColor: GREY,
            borderDash: [6, 4], spanGaps: true },
          { label: "Accuracy", data: data.accuracy, borderColor: ORANGE, backgroundColor: ORANGE,
            pointStyle: "rectRot", spanGaps: true }
        ] },
        options: { scales: { y: percentAxis() }, plugins: { tooltip: percentTooltip() } }
      };
    },
    reviews: function () {
      if (!hasData(data.reviews)) { return null; }
      return {
        type: "bar",
        data: { labels: data.days.map(dayLabel), datasets: [
          { label: "Reviews", data: data.reviews, backgroundColor: BLUE }
        ] },
        options: { scales: { y: countAxis() }, plugins: { legend: { display: false } } }
      };
    },
    forecast: function () {
      if (!hasData(data.forecast.values)) { return null; }
      return {
        type: "bar",
        data: { labels: data.forecast.labels.map(dayLabel), datasets: [
          { label: "Cards due", data: data.forecast.values, backgroundColor: GREEN }
        ] },
        options: { scales: { y: countAxis() }, plugins: { legend: { display: false } } }
      };
    },
    retention: function () {
      if (!data.retention.labels.length) { return null; }
      return {
        type: "bar",
        data: { labels: data.retention.labels, datasets: [
          { label: "If you keep up", data: data.retention.kept, backgroundColor: BLUE },
          { label: "If you stop now", data: data.retention.stopped, backgroundColor: RED }
        ] },
        options: { indexAxis: "y", scales: { x: percentAxis() } }
      };
    },
    chapters: function () {
      if (!data.chapters.labels.length) { return null; }
      return {
        type: "bar",
        data: { labels: data.chapters.labels, datasets: [
          { label: "Mean grade", data: data.chapters.values, backgroundColor: ORANGE }
        ] },
        options: { indexAxis: "y", scales: { x: percentAxis() }, plugins: { legend: { display: false } } }
      };
    },
    steps: function () {
      if (!data.steps.labels.length) { return null; }
      return {
        type: "bar",
        data: { labels: data.steps.labels, datasets: [
          { label: "Mean credit", data: data.steps.values, backgroundColor: GREEN }
        ] },
        options: { indexAxis: "y", scales: { x: percentAxis() }, plugins: { legend: { display: false } } }
      };
    },
    misconceptions: function () {
      if (!data.misconceptions.labels.length) { return null; }
      return {
        type: "bar",
        data: { labels: data.misconceptions.labels, datasets: [
          { label: "Times named", data: data.misconceptions.values, backgroundColor: RED }
        ] },
        options: { indexAxis: "y", scales: { x: countAxis() }, plugins: { legend: { display: false } } }
      };
    }
  };

  document.querySelectorAll("canvas[data-chart]").forEach(function (canvas) {
    var build = charts[canvas.dataset.chart];
    var config = build && build();
    if (!config) {
      var box = canvas.parentNode;
      box.classList.add("chart-empty");
      box.textContent = "Nothing to plot yet.";
      return;
    }
    if (config.options.indexAxis === "y") {
      // Horizontal bars: the box grows with the number of rows, so each bar keeps a readable height,
      // and long row names are shortened on the axis (the tooltip and the table keep them whole).
      canvas.parentNode.style.height = Math.min(560, 70 + 34 * config.data.labels.length) + "px";
      var room = canvas.parentNode.clientWidth < 500 ? 18 : 34;
      config.options.scales.y = { ticks: { autoSkip: false, callback: function (value) {
        var label = String(this.getLabelForValue(value));
        return label.length > room ? label.slice(0, room - 1) + "…" : label;
      } } };
    }
    config.data.datasets.forEach(function (dataset) { dataset.maxBarThickness = 28; });
    new Chart(canvas, config);
  });

  function resizeAll() {
    Object.values(Chart.instances).forEach(function (chart) { chart.resize(); });
  }
  window.addEventListener("beforeprint", resizeAll);
  window.addEventListener("afterprint", resizeAll);
})();
