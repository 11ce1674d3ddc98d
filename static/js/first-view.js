/* The answer clock runs from the first view (README), a reload included. Included once, in templates/base.html.
 *
 * An answer form carries when its page was shown as a signed token (a hidden `started`, or `opened` in a round:
 * drills.problems.forms.sign_start), and the server times the answer from it. Each GET signs a new one, so a
 * reload used to restart the clock. The form (or the element holding the token) names what is being answered in
 * `data-first-view` ("problem:weights:12345:3", "card:7:2", "critique:<slug>", "round-item:41"): the first
 * token shown for that name in this tab is kept in sessionStorage, and a later view of the same thing in the tab
 * (a reload, back, a link to it) puts that first token back into the form. Sending the form forgets it: the next
 * view after an answer is a fresh one (a refused answer's form carries the token it was sent with and names what
 * it answers, so it is kept again; a graded problem's form names nothing). The server still checks the signature and refuses a moment after its own clock; with scripts off, or
 * storage refused, each view signs its own as before.
 */
(function () {
  "use strict";

  var PREFIX = "first-view:";
  var TOKENS = "input[name='started'], input[name='opened']";

  function holders(root) {
    var found = Array.prototype.slice.call(root.querySelectorAll("[data-first-view]"));
    if (root.matches && root.matches("[data-first-view]")) { found.unshift(root); }
    return found;
  }

  function keep(root) {
    holders(root).forEach(function (holder) {
      var token = holder.querySelector(TOKENS);
      if (!token || !token.value) { return; }
      var key = PREFIX + holder.getAttribute("data-first-view");
      try {
        var first = window.sessionStorage.getItem(key);
        if (first) {
          token.value = first;
        } else {
          window.sessionStorage.setItem(key, token.value);
        }
      } catch (error) { /* storage refused: this view's own token stands */ }
    });
  }

  // Capture: htmx handles its forms' submit events, and this must see them first.
  document.addEventListener("submit", function (event) {
    var holder = event.target.closest ? event.target.closest("[data-first-view]") : null;
    if (!holder) { return; }
    try { window.sessionStorage.removeItem(PREFIX + holder.getAttribute("data-first-view")); } catch (error) { /* as above */ }
  }, true);

  keep(document);
  // A form that arrives later (the next review card, a refused answer's form) keeps its token when it arrives.
  document.addEventListener("htmx:load", function (event) {
    if (event.target !== document.body) { keep(event.target); }
  });
})();
