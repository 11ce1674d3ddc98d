/* The countdown of a timed round. The server's clock is the only one that counts: the page starts from the
   seconds it was rendered with (data-remaining), re-syncs from the X-Round-Remaining header of every htmx
   response (autosaves and the clock poll), and again when the connection comes back or the tab is shown.
   At zero it sends what is typed one last time and goes to the round, which the server closes.
   Each text box has a hidden twin, base-<name>, holding what the box held when the page was shown; the server writes
   only the boxes whose text differs from their twin (drills.rounds.services.typed), so two tabs of one item merge
   box by box. After each autosave succeeds the twins move on to what that save sent (not to what was typed while
   it was in flight, which the next save sends). */
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

  // The text each box had when an autosave of the item's form was sent, kept until that save succeeds.
  function twins(form) { return form.querySelectorAll("input[data-base-of]"); }

  document.addEventListener("htmx:configRequest", function (event) {
    var form = event.detail && event.detail.elt;
    if (!form || form.id !== "item-form") { return; }
    var sent = {};
    Array.prototype.forEach.call(twins(form), function (twin) {
      var box = form.elements.namedItem(twin.dataset.baseOf);
      if (box && typeof box.value === "string") { sent[twin.dataset.baseOf] = box.value; }
    });
    form.roundSent = sent;
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.detail && event.detail.elt;
    if (form && form.id === "item-form" && event.detail.successful && form.roundSent) {
      Array.prototype.forEach.call(twins(form), function (twin) {
        if (Object.prototype.hasOwnProperty.call(form.roundSent, twin.dataset.baseOf)) {
          twin.value = form.roundSent[twin.dataset.baseOf];
        }
      });
      form.roundSent = null;
    }
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var xhr = event.detail && event.detail.xhr;
    var value = xhr && xhr.getResponseHeader && xhr.getResponseHeader("X-Round-Remaining");
    if (value !== null && value !== undefined && value !== "") { sync(value); tick(); }
  });
})();
