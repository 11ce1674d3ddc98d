/* Calculator page: a pasted config.json goes by POST (issue 21).
 *
 * The form is a GET form (shareable addresses, cached results); htmx recomputes with GET on every change.
 * A pasted config.json can be 100,000 characters, far past what an address carries (servers answer 414
 * past a few KB), so while the config box holds text, htmx sends the same fields as a POST body instead.
 * The POST carries the CSRF token like every htmx request (<body hx-headers>). Without JavaScript the form
 * stays a GET form: a config of a few KB still fits in its address.
 */
(function () {
  "use strict";
  document.addEventListener("htmx:configRequest", function (event) {
    var form = event.detail.elt;
    if (!form || !form.classList || !form.classList.contains("calc-form")) return;
    var config = form.querySelector("textarea[name='config']");
    if (config && config.value.trim() !== "") {
      event.detail.verb = "post";
      event.detail.useUrlParams = false;
      // htmx sets the body's type before this event, and only for verbs other than GET.
      event.detail.headers["Content-Type"] = "application/x-www-form-urlencoded";
    }
  });
})();

/* Calculator page: the form and its results never disagree (issue 20).
 *
 * - The address follows the inputs (the server's HX-Replace-Url), so a reload or a link shows the same calculation.
 * - A browser that restores form values on Back or reload (they are not in the address when a config was pasted,
 *   or a cached copy is older) may show values the results were not computed from: on pageshow, a control whose
 *   value differs from the one the page was rendered with asks for the results again.
 * - While the config box holds text the model dropdown is disabled, with a sentence saying the config replaces it.
 */
(function () {
  "use strict";
  var form = document.querySelector("form.calc-form");
  if (!form) { return; }
  var config = form.querySelector("textarea[name='config']");
  var model = form.querySelector("select[name='model']");
  var note = document.getElementById("model-replaced");

  function syncModel() {
    if (!config || !model) { return; }
    var pasted = config.value.trim() !== "";
    model.disabled = pasted;
    if (note) { note.hidden = !pasted; }
    var described = (model.getAttribute("aria-describedby") || "").split(" ").filter(function (id) {
      return id && id !== "model-replaced";
    });
    if (pasted) { described.push("model-replaced"); }
    model.setAttribute("aria-describedby", described.join(" "));
  }

  function differsFromRendered(control) {
    if (!control.name || control.name === "previous" || control.type === "hidden") { return false; }
    if (control.tagName === "SELECT") {
      var rendered = 0;  // without a selected attribute the first option is the rendered choice
      Array.prototype.forEach.call(control.options, function (option, index) {
        if (option.defaultSelected) { rendered = index; }
      });
      return control.selectedIndex !== rendered;
    }
    if (control.type === "checkbox" || control.type === "radio") { return control.checked !== control.defaultChecked; }
    return control.value.replace(/\r\n/g, "\n") !== control.defaultValue.replace(/\r\n/g, "\n");
  }

  if (config) { config.addEventListener("input", syncModel); }
  window.addEventListener("pageshow", function (event) {
    syncModel();
    if (event.persisted) { return; }  // the back-forward cache kept the page exactly as it was left
    var stale = Array.prototype.some.call(form.elements, differsFromRendered);
    if (stale && window.htmx) { window.htmx.trigger(form, "change"); }
  });
})();

/* Calculator page on a phone: the summary bar of headline numbers (#calc-summary, below 992 px) shows while the
 * results section is off screen, so a changed input shows its result where the user is, and hides while the
 * results themselves are in view. The bar is re-rendered with every recompute; the observer watches #results,
 * which stays.
 */
(function () {
  "use strict";
  var results = document.getElementById("results");
  if (!results || !("IntersectionObserver" in window)) { return; }
  var visible = false;
  function apply() {
    var bar = document.getElementById("calc-summary");
    if (bar) { bar.classList.toggle("is-offscreen", visible); }
  }
  new IntersectionObserver(function (entries) {
    visible = entries[entries.length - 1].isIntersecting;
    apply();
  }, { threshold: 0.05 }).observe(results);
  document.body.addEventListener("htmx:afterSwap", apply);
})();

/* A formula wider than its row scrolls inside it; a phone draws no scrollbar until one scrolls, so the sentence under
 * it (calc-formula-more, hidden in the page) is shown while the formula is wider than its box: on load, after htmx
 * swaps new results in, and when the window changes width.
 */
(function () {
  "use strict";
  function markWide() {
    Array.prototype.forEach.call(document.querySelectorAll(".calc-formula"), function (formula) {
      var more = formula.nextElementSibling;
      if (more && more.classList.contains("calc-formula-more")) {
        more.hidden = formula.scrollWidth <= formula.clientWidth + 1;
      }
    });
  }
  document.addEventListener("DOMContentLoaded", markWide);
  document.addEventListener("htmx:afterSettle", markWide);
  window.addEventListener("resize", markWide);
})();
