/* Home page, first run: offer the browser's own time zone (Intl) in one click. Without JavaScript the link to the
 * review settings remains; a browser already on the saved zone (or on UTC) is offered nothing. */
(function () {
  "use strict";
  var input = document.getElementById("first-run-zone");
  var button = document.getElementById("first-run-zone-button");
  var zone = window.Intl && Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!input || !button || !zone || zone === "UTC" || zone === "Etc/UTC") { return; }
  input.value = zone;
  button.textContent = "Use this browser's time zone (" + zone.replace(/_/g, " ") + ")";
  button.hidden = false;
})();
