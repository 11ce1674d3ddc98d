/* Printing opens every closed <details> (model answers, rubrics, contents) and closes them again after.
 *
 * The print CSS in static/css/app.css already lays closed <details> out as open (::details-content), which is
 * what prints with JavaScript off; opening them for real as well covers browsers without that selector and
 * keeps the page's own state honest while the print preview is up. Only the <details> this script opened
 * are closed afterwards, so what the reader had open stays open.
 */
(function () {
  "use strict";

  var opened = [];

  window.addEventListener("beforeprint", function () {
    Array.prototype.forEach.call(document.querySelectorAll("details:not([open])"), function (details) {
      details.open = true;
      opened.push(details);
    });
  });

  window.addEventListener("afterprint", function () {
    opened.forEach(function (details) { details.open = false; });
    opened = [];
  });
})();
