/* Home page, first run: offer the browser's own time zone (Intl) in one click. Without JavaScript the link to the
 * review settings remains. A browser on UTC is offered UTC too: choosing it finishes the step (a zone chosen, not
 * one other than UTC, is what the step asks for). */
(function () {
  "use strict";
  var input = document.getElementById("first-run-zone");
  var button = document.getElementById("first-run-zone-button");
  var zone = window.Intl && Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!input || !button || !zone) { return; }
  input.value = zone;
  button.textContent = "Use this browser's time zone (" + zone.replace(/_/g, " ") + ")";
  button.hidden = false;
})();
