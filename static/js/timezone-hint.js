/* Review settings: a hint, not a change -- offer the browser's time zone when the form still says something else.
 * A static file rather than an inline <script>: the Content-Security-Policy allows scripts from the site only. */
(function () {
  "use strict";
  var select = document.getElementById("id_time_zone");
  var zone = window.Intl && Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!select || !zone || select.value === zone || !select.querySelector('option[value="' + zone + '"]')) { return; }
  var button = document.createElement("button");
  button.type = "button";
  button.className = "btn btn-link btn-sm p-0 mt-1";
  button.textContent = "Use this browser's time zone (" + zone.replace(/_/g, " ") + ")";
  button.addEventListener("click", function () { select.value = zone; button.remove(); });
  select.insertAdjacentElement("afterend", button);
})();
