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
