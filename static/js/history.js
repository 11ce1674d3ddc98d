/* Back after an htmx swap shows the page as it was (issue 20).
 *
 * Before htmx pushes a new address it keeps a snapshot of the page's HTML for Back. A value typed into a box or a
 * choice made in a select lives in the element's properties, not in its HTML attributes, so the snapshot would
 * show the form as first loaded beside the results of a later state. Just before the snapshot is taken
 * (htmx:beforeHistorySave), every form control's current state is written into its attributes. Password and
 * file inputs are left alone: their values never belong in a stored snapshot.
 */
(function () {
  "use strict";
  function keepState(control) {
    var type = (control.type || "").toLowerCase();
    if (type === "password" || type === "file") { return; }
    if (control.tagName === "SELECT") {
      Array.prototype.forEach.call(control.options, function (option) {
        option.toggleAttribute("selected", option.selected);
      });
    } else if (control.tagName === "TEXTAREA") {
      control.textContent = control.value;
    } else if (type === "checkbox" || type === "radio") {
      control.toggleAttribute("checked", control.checked);
    } else {
      control.setAttribute("value", control.value);
    }
  }
  document.addEventListener("htmx:beforeHistorySave", function (event) {
    var root = (event.detail && event.detail.historyElt) || document.body;
    root.querySelectorAll("input, select, textarea").forEach(keepState);
  });
})();
