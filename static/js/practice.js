/* Chapter questions as practice (issue 37, item 2): write first, then compare. Included by runbook/chapter.html.
 *
 * Each question ([data-practice]) has an answer box and, after it, the <details class="rb-answer"> holding the
 * model answer and rubric. The "Compare with the model answer" button (hidden until this script runs) opens that
 * <details> once the box holds an answer, and says what to do when it is empty; the <details>' own summary stays
 * the secondary, on-request way to open it without answering. Opening moves focus to the model answer, as the
 * review page does after its reveal. Nothing typed leaves the browser: each box is kept in localStorage under
 * "practice:<page path>:<box id>" as it is typed, so a reload or a return to the chapter finds it again (a
 * browser that refuses storage keeps the box for the page's life only). With scripts off the box is a
 * scratchpad and the summary opens the answer; print (print CSS, print.js) opens every answer either way.
 */
(function () {
  "use strict";

  var EMPTY = "Write an answer first, or use “Show the model answer without answering” below.";

  function kept(key, value) {
    // Reads (value undefined) or writes the stored answer; storage may be refused (private modes, quotas).
    try {
      if (value === undefined) { return window.localStorage.getItem(key); }
      if (value) { window.localStorage.setItem(key, value); } else { window.localStorage.removeItem(key); }
    } catch (refused) { /* the box still works, for this page's life */ }
    return null;
  }

  function enhance(block) {
    var box = block.querySelector("textarea");
    var button = block.querySelector("[data-practice-check]");
    var hint = block.querySelector(".rb-practice-hint");
    var details = block.nextElementSibling;
    if (!box || !button || !details || details.tagName !== "DETAILS") { return; }
    var firstHint = hint ? hint.textContent : "";
    var key = "practice:" + window.location.pathname + ":" + box.id;
    var before = kept(key);
    if (before && !box.value) { box.value = before; }
    button.hidden = false;

    button.addEventListener("click", function () {
      if (!box.value.trim()) {
        if (hint) { hint.textContent = EMPTY; hint.classList.add("is-warning"); }
        box.focus();
        return;
      }
      if (hint) { hint.textContent = firstHint; hint.classList.remove("is-warning"); }
      details.open = true;
      details.classList.add("is-compared");
      var heading = details.querySelector(".rb-answer-heading");
      if (heading) {
        heading.setAttribute("tabindex", "-1");
        heading.focus();
      }
    });

    box.addEventListener("input", function () {
      kept(key, box.value);
      if (hint && box.value.trim() && hint.classList.contains("is-warning")) {
        hint.textContent = firstHint;
        hint.classList.remove("is-warning");
      }
    });
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("[data-practice]"), enhance);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
