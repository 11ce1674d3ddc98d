/* The countdown of a timed round. The server's clock is the only one that counts: the page starts from the
   seconds it was rendered with (data-remaining), re-syncs from the X-Round-Remaining header of every htmx
   response (autosaves and the clock poll), and again when the connection comes back or the tab is shown.
   At zero it sends what is typed one last time and goes to the round, which the server closes. */
(function () {
  "use strict";
  var endAt = null;
  var fired = false;

  function clock() { return document.getElementById("round-clock"); }

  function sync(seconds) {
    var value = parseInt(seconds, 10);
    if (!isNaN(value)) { endAt = performance.now() + value * 1000; }
  }

  function format(total) {
    var h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
    var mm = h ? String(m).padStart(2, "0") : String(m);
    return (h ? h + ":" : "") + mm + ":" + String(s).padStart(2, "0");
  }

  function expire(el) {
    var form = document.getElementById("item-form");
    var go = function () { window.location.href = el.dataset.roundUrl; };
    if (form && el.dataset.saveUrl) {
      fetch(el.dataset.saveUrl, { method: "POST", body: new FormData(form), credentials: "same-origin",
                                  headers: { "HX-Request": "true" }, keepalive: true })
        .catch(function () {}).finally(go);
    } else {
      go();
    }
  }

  function tick() {
    var el = clock();
    if (!el || endAt === null || el.dataset.active !== "1") { return; }
    var left = Math.max(0, Math.ceil((endAt - performance.now()) / 1000));
    var time = el.querySelector(".round-clock-time");
    if (time) { time.textContent = format(left); }
    el.classList.toggle("is-low", left <= 60);
    if (left === 0 && !fired) { fired = true; expire(el); }
  }

  function resync() { document.body.dispatchEvent(new Event("round:resync")); }

  document.addEventListener("DOMContentLoaded", function () {
    var el = clock();
    if (!el) { return; }
    sync(el.dataset.remaining);
    tick();
    window.setInterval(tick, 250);
    window.addEventListener("online", resync);
    document.addEventListener("visibilitychange", function () { if (!document.hidden) { resync(); } });
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var xhr = event.detail && event.detail.xhr;
    var value = xhr && xhr.getResponseHeader && xhr.getResponseHeader("X-Round-Remaining");
    if (value !== null && value !== undefined && value !== "") { sync(value); tick(); }
  });
})();
