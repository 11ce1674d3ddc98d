/* Coach dashboard: poll the tables only while the tab is visible, and at once when it becomes visible again.
 * htmx's trigger filters ("every 20s [document.visibilityState === 'visible']") are evaluated with eval,
 * which the Content-Security-Policy refuses; these two listeners do the same without it. */
(function () {
  "use strict";
  document.addEventListener("htmx:confirm", function (event) {
    if (event.target && event.target.id === "dashboard-tables" && document.visibilityState !== "visible") {
      event.preventDefault();  // skip this poll; the next "every" tick asks again
    }
  });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") {
      document.dispatchEvent(new CustomEvent("dashboard-visible"));
    }
  });
})();
