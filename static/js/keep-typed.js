/* What was typed survives a session that ended (issue 28). Included once, in templates/base.html.
 *
 * When an htmx request finds the session gone (logged out in another tab, expired), the server answers
 * `HX-Trigger: login-required` and `HX-Redirect` to the log-in page with `next` set to this page
 * (config/login_redirect.py). htmx fires the event before it follows the redirect: every text field and
 * textarea of the page whose value differs from what the page was loaded with is written to sessionStorage
 * under this page's address. When that address is loaded again (after logging in), each kept value goes back
 * into the same field — the same form action, the same name, the same position — if that field is still as
 * the page loaded it, and a message says so. A stale CSRF token on an htmx request does the same with the page
 * itself as the redirect (config.login_redirect.csrf_failure). A field that is not on the page (another review card came up)
 * gets nothing. Password, hidden and file inputs are never kept; sessionStorage is this tab's only and is
 * emptied once restored (or after an hour).
 *
 * A refused grade keeps a draft the same way. When a problem's answers come back refused (a step unreadable or
 * blank: nothing recorded), its form carries `data-draft` (the problem's address) and `data-draft-state="keep"`:
 * every answer box that is not blank (and every chosen verdict) is written to sessionStorage under that address.
 * A later view of the problem with a fresh sheet (`data-draft-state="open"`: a return after leaving, a reload)
 * puts each kept value back into its box if that box is empty, and says so; the draft stays until a grade is
 * stored (`data-draft-state="clear"`, the graded answer's form), so leaving again loses nothing either. A page
 * showing a graded attempt takes nothing from a draft.
 */
(function () {
  "use strict";

  var PREFIX = "keep-typed:";
  var MAX_AGE_MS = 60 * 60 * 1000;
  var TEXT_TYPES = { "": true, text: true, number: true, search: true, email: true, url: true, tel: true };

  function storageKey() { return PREFIX + window.location.pathname + window.location.search; }

  function typedFields(root) {
    return Array.prototype.filter.call(root.querySelectorAll("input, textarea"), function (field) {
      if (field.disabled || field.readOnly) { return false; }
      return field.tagName === "TEXTAREA" || TEXT_TYPES[(field.getAttribute("type") || "").toLowerCase()] === true;
    });
  }

  // Where a field sits: its form's action, its name (or id) and its position among fields of that form and name.
  function fieldKeys(fields) {
    var seen = {};
    return fields.map(function (field) {
      var form = field.form ? (field.form.getAttribute("action") || "") : "";
      var base = form + "|" + (field.name || field.id || "");
      seen[base] = (seen[base] || 0) + 1;
      return base + "|" + seen[base];
    });
  }

  function save() {
    var fields = typedFields(document);
    var keys = fieldKeys(fields);
    var kept = {};
    var any = false;
    fields.forEach(function (field, index) {
      if (field.value !== field.defaultValue && field.value.trim() !== "") {
        kept[keys[index]] = field.value;
        any = true;
      }
    });
    try {
      if (any) {
        window.sessionStorage.setItem(storageKey(), JSON.stringify({ at: Date.now(), fields: kept }));
      }
    } catch (error) { /* storage full or refused: nothing more can be done */ }
  }

  function tell(text) {
    var messages = document.getElementById("messages");
    if (messages) {
      var alert = document.createElement("div");
      alert.className = "alert alert-info mt-3 keep-typed-restored";
      alert.setAttribute("role", "status");
      alert.textContent = text;
      messages.appendChild(alert);
    }
    var region = document.getElementById("a11y-status");
    if (region) { region.textContent = text; }
  }

  function restore() {
    var stored;
    try { stored = JSON.parse(window.sessionStorage.getItem(storageKey()) || "null"); } catch (error) { return; }
    if (!stored || !stored.fields) { return; }
    if (Date.now() - stored.at > MAX_AGE_MS) { window.sessionStorage.removeItem(storageKey()); return; }
    var fields = typedFields(document);
    var keys = fieldKeys(fields);
    var restored = 0;
    fields.forEach(function (field, index) {
      var key = keys[index];
      if (key && Object.prototype.hasOwnProperty.call(stored.fields, key) && field.value === field.defaultValue) {
        field.value = stored.fields[key];
        delete stored.fields[key];
        restored += 1;
      }
    });
    if (Object.keys(stored.fields).length === 0) {
      window.sessionStorage.removeItem(storageKey());
    } else {
      window.sessionStorage.setItem(storageKey(), JSON.stringify(stored));
    }
    if (restored > 0) {
      tell("What you had typed is back in its " + (restored === 1 ? "box." : "boxes."));
    }
  }

  // --- a refused grade's draft, kept under the problem's address until a grade is stored

  function draftFields(form) {
    return typedFields(form).concat(Array.prototype.slice.call(form.querySelectorAll("select:not([disabled])")));
  }

  function keepDraft(form, key) {
    var fields = draftFields(form);
    var keys = fieldKeys(fields);
    var kept = {};
    var any = false;
    fields.forEach(function (field, index) {
      if (field.value.trim() !== "") {
        kept[keys[index]] = field.value;
        any = true;
      }
    });
    if (any) {
      window.sessionStorage.setItem(key, JSON.stringify({ at: Date.now(), fields: kept }));
    }
  }

  function restoreDraft(form, key) {
    var stored = JSON.parse(window.sessionStorage.getItem(key) || "null");
    if (!stored || !stored.fields) { return; }
    var fields = draftFields(form);
    var keys = fieldKeys(fields);
    var restored = 0;
    fields.forEach(function (field, index) {
      if (Object.prototype.hasOwnProperty.call(stored.fields, keys[index]) && field.value === "") {
        field.value = stored.fields[keys[index]];
        restored += 1;
      }
    });
    if (restored > 0) {
      tell("Your ungraded working is back in its " + (restored === 1 ? "box" : "boxes") +
           ", as you left it when the grade was refused.");
    }
  }

  function drafts(root) {
    var forms = Array.prototype.slice.call(root.querySelectorAll("form[data-draft]"));
    if (root.matches && root.matches("form[data-draft]")) { forms.unshift(root); }
    forms.forEach(function (form) {
      var key = PREFIX + "draft:" + form.getAttribute("data-draft");
      var state = form.getAttribute("data-draft-state");
      try {
        if (state === "keep") {
          keepDraft(form, key);
        } else if (state === "clear") {
          window.sessionStorage.removeItem(key);
        } else if (state === "open") {
          restoreDraft(form, key);
        }
      } catch (error) { /* storage refused or its text unreadable: the page stands as the server sent it */ }
    });
  }

  document.addEventListener("login-required", save);
  restore();
  drafts(document);
  // A field that arrives later (a fragment loaded after the page) is filled when it arrives; a refused or graded
  // answer's form, swapped in by htmx, keeps or clears its draft.
  document.addEventListener("htmx:load", function (event) {
    if (event.target !== document.body) {
      restore();
      drafts(event.target);
    }
  });
})();
