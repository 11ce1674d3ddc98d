/* Focus and announcements after htmx swaps (issue 12). Included once, in templates/base.html.

   The rule:
   - A swap the user asked for explicitly — a form submitted (button, Enter) or a button or link clicked —
     moves focus to the result: the first element carrying `data-focus-after-swap` in what was swapped in
     (or the swap target itself). Such elements have tabindex="-1" so they can take focus without joining
     the Tab order; Tab then continues from the result. If there is none but a field was marked invalid
     (aria-invalid="true"), focus goes to the first such field instead.
   - A "live" swap, triggered by typing or changing a field (htmx triggers input, change, keyup, and the
     polls), leaves focus where it is: yanking the caret out of the field being typed into on every
     keystroke would be hostile. The result is announced instead: the text of the swapped-in element that
     carries `data-announce` is copied into #a11y-status, a polite live region that is in the page from the
     start (a live region inserted by the swap itself is not reliably announced).
   - Either way, a swap that replaced the very element holding focus gives it to the same control of the new
     content rather than letting it fall back to the page.
   - After a full page load that follows a form post, the page's messages (#messages, "Recorded: Good ...")
     say what happened: the first one takes focus, so the next Tab continues into the page from there. A form
     sent back with errors puts focus on its first invalid field instead. */
(function () {
  "use strict";

  var EXPLICIT = { submit: true, click: true };
  var CONTROLS = "a[href], button:not([disabled]), input:not([type='hidden']):not([disabled]), select, textarea";

  function status() { return document.getElementById("a11y-status"); }

  function firstMarked(root, selector) {
    if (!root) { return null; }
    if (root.matches && root.matches(selector)) { return root; }
    return root.querySelector(selector);
  }

  function announce(root) {
    var region = status();
    var source = firstMarked(root, "[data-announce]");
    if (!region || !source) { return; }
    var text = (source.getAttribute("data-announce") || source.textContent || "").replace(/\s+/g, " ").trim();
    // Clearing first makes a repeated identical message be announced again.
    region.textContent = "";
    window.setTimeout(function () { region.textContent = text; }, 50);
  }

  function moveFocus(root) {
    var target = firstMarked(root, "[data-focus-after-swap]") || firstMarked(root, "[aria-invalid='true']");
    if (!target) { return false; }
    if (!target.matches("a[href], button, input, select, textarea, [tabindex]")) {
      target.setAttribute("tabindex", "-1");
    }
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: "nearest" });
    return true;
  }

  // A swap that replaces the element holding focus (an outerHTML swap of the form whose button was pressed,
  // e.g. "Add to deck", or a poll refreshing a table while a link in it has focus) drops focus to the page
  // itself, and the keyboard user loses their place. Remember which control had it, by its position among the
  // target's controls, and give focus to the same control of the new content.
  var lostFocus = null;

  function controls(root) {
    var list = Array.prototype.slice.call(root.querySelectorAll(CONTROLS));
    return root.matches(CONTROLS) ? [root].concat(list) : list;
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    var active = document.activeElement;
    lostFocus = null;
    if (target && active && active !== document.body && target.contains(active)) {
      lostFocus = { index: Math.max(0, controls(target).indexOf(active)) };
    }
  });

  function recoverFocus(root) {
    var active = document.activeElement;
    if (!lostFocus || (active && active !== document.body)) { return; }
    var list = controls(root);
    var control = list[Math.min(lostFocus.index, list.length - 1)];
    lostFocus = null;
    if (control) { control.focus({ preventScroll: true }); }
  }

  // htmx fires afterSettle on each element the swap put in the page: the target for an innerHTML swap, the
  // new element(s) for an outerHTML swap, and any out-of-band element.
  document.addEventListener("htmx:afterSettle", function (event) {
    var root = event.target;
    if (!root || root.nodeType !== 1 || !root.isConnected) { return; }
    var config = (event.detail && event.detail.requestConfig) || {};
    var trigger = config.triggeringEvent;
    var explicit = Boolean(trigger && EXPLICIT[trigger.type]);
    if (explicit && moveFocus(root)) { lostFocus = null; return; }
    // Focus was not moved to a result: say what changed, and keep the user's place if the swap took it.
    announce(root);
    recoverFocus(root);
  });

  // A calculator formula wider than its row scrolls inside it (.calc-formula, overflow-x: auto). Only such a
  // formula joins the Tab order (tabindex 0, named by its step) so a keyboard user can scroll it; one that
  // fits stays out of it, so Tab through the results is not lengthened by formulas with nothing to scroll.
  function scrollableFormulas() {
    document.querySelectorAll(".calc-formula").forEach(function (box) {
      if (box.scrollWidth > box.clientWidth + 1) {
        var step = box.closest("li");
        var label = step && step.querySelector(".calc-step-label .fw-semibold");
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "group");
        box.setAttribute("aria-label", "Formula" + (label ? " of " + label.textContent.trim() : "") +
          ", wider than its row: scroll sideways");
      } else if (box.getAttribute("tabindex") === "0") {
        ["tabindex", "role", "aria-label"].forEach(function (name) { box.removeAttribute(name); });
      }
    });
  }
  var resizing = null;
  document.addEventListener("DOMContentLoaded", scrollableFormulas);
  window.addEventListener("load", scrollableFormulas);  // web fonts can widen a formula after the first layout
  document.addEventListener("htmx:afterSettle", scrollableFormulas);
  window.addEventListener("resize", function () {
    window.clearTimeout(resizing);
    resizing = window.setTimeout(scrollableFormulas, 150);
  });

  // After a full page load: a form sent back with errors marks its fields aria-invalid, and the first takes
  // focus (over a field's autofocus, which Django puts on the first field whatever its state). Otherwise the
  // page's messages, which say what the last post did, take it — unless something (autofocus) already has it.
  document.addEventListener("DOMContentLoaded", function () {
    var active = document.activeElement;
    var idle = !active || active === document.body;
    if (!idle && !active.hasAttribute("autofocus")) { return; }
    var invalid = document.querySelector("main [aria-invalid='true']");
    if (invalid && invalid.matches(CONTROLS)) {
      invalid.focus();
      return;
    }
    var message = document.querySelector("#messages .alert");
    if (message && idle) {
      message.setAttribute("tabindex", "-1");
      message.focus({ preventScroll: true });
    }
  });
})();
