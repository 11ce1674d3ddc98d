/* Step-through figures of the runbook (runbook/figures/): one frame at a time, previous/next/play.
 *
 * The server renders every frame of a <figure class="rb-figure">; without this script they are all
 * shown, stacked, each with its caption. Here the figure gets the class "is-enhanced" (the CSS then
 * shows only the frame marked "is-current", all frames sharing one grid cell so the height never
 * jumps) and, once painted, "is-animated" (a short cross-fade between steps); its controls are
 * revealed and wired, and the left/right arrow keys step it while focus is inside. Play advances every few seconds and stops at the last step. Printing ignores all of this
 * (the print CSS shows the last frame and the numbered list of steps).
 */
(function () {
  "use strict";

  var INTERVAL_MS = 2600;

  function setup(figure) {
    if (figure.getAttribute("data-figure-ready")) return;
    var frames = Array.prototype.slice.call(figure.querySelectorAll(".rb-figure-frame"));
    var controls = figure.querySelector(".rb-figure-controls");
    if (!controls || frames.length < 2) return;
    figure.setAttribute("data-figure-ready", "true");

    var prev = controls.querySelector('[data-figure-action="prev"]');
    var next = controls.querySelector('[data-figure-action="next"]');
    var play = controls.querySelector('[data-figure-action="play"]');
    var playIcon = play.querySelector(".rb-figure-play-icon");
    var playText = play.querySelector(".rb-figure-play-text");
    var counter = controls.querySelector(".rb-figure-counter");
    var live = controls.querySelector(".rb-figure-live");
    var current = 0;
    var timer = null;

    function setDisabled(button, disabled) {
      // aria-disabled, not disabled: a disabled button would drop the keyboard focus at either end.
      button.setAttribute("aria-disabled", disabled ? "true" : "false");
    }

    function show(index, announce) {
      current = Math.max(0, Math.min(frames.length - 1, index));
      frames.forEach(function (frame, i) {
        var on = i === current;
        frame.classList.toggle("is-current", on);
        if (on) frame.removeAttribute("aria-hidden"); else frame.setAttribute("aria-hidden", "true");
      });
      counter.textContent = "Step " + (current + 1) + " of " + frames.length;
      setDisabled(prev, current === 0);
      setDisabled(next, current === frames.length - 1);
      if (announce && live) {
        var caption = frames[current].querySelector(".rb-figure-caption");
        live.textContent = caption ? caption.textContent : counter.textContent;
      }
    }

    function setPlaying(playing) {
      // The label says what the button will do (Play or Pause), so no aria-pressed as well.
      play.setAttribute("aria-label", playing ? "Pause" : "Play the steps");
      playIcon.textContent = playing ? "❚❚" : "▶";
      playText.textContent = playing ? "Pause" : "Play";
      figure.classList.toggle("is-playing", playing);
    }

    function stop() {
      if (timer !== null) window.clearInterval(timer);
      timer = null;
      setPlaying(false);
    }

    function start() {
      if (current >= frames.length - 1) show(0, true);
      setPlaying(true);
      timer = window.setInterval(function () {
        show(current + 1, true);
        if (current >= frames.length - 1) stop();
      }, INTERVAL_MS);
    }

    prev.addEventListener("click", function () { stop(); show(current - 1, true); });
    next.addEventListener("click", function () { stop(); show(current + 1, true); });
    play.addEventListener("click", function () { if (timer === null) start(); else stop(); });
    figure.addEventListener("keydown", function (event) {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      if (event.key === "ArrowRight") { stop(); show(current + 1, true); event.preventDefault(); }
      else if (event.key === "ArrowLeft") { stop(); show(current - 1, true); event.preventDefault(); }
    });
    document.addEventListener("visibilitychange", function () { if (document.hidden) stop(); });
    window.addEventListener("beforeprint", stop);

    figure.classList.add("is-enhanced");
    controls.hidden = false;
    show(0, false);
    // Cross-fades only from the next frame on: enhancing must not fade the stacked frames out.
    window.requestAnimationFrame(function () {
      window.requestAnimationFrame(function () { figure.classList.add("is-animated"); });
    });
  }

  function setupAll(root) {
    var scope = root && root.querySelectorAll ? root : document;
    if (scope.matches && scope.matches(".rb-figure")) setup(scope);
    Array.prototype.forEach.call(scope.querySelectorAll(".rb-figure"), setup);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { setupAll(document); });
  } else {
    setupAll(document);
  }
  // Content swapped in by htmx later gets its figures wired too.
  document.addEventListener("htmx:load", function (event) { setupAll(event.target); });
})();
