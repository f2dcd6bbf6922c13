// The console's working-memory and sessions pages (loaded on every page; acts only on its own elements).
// TTL countdowns: an element with data-expires="ISO time" inside a container with data-now="ISO time" (the
// server's clock when it rendered the fragment) shows the time left, every second, as the server's clock
// would count it: data-now plus the time elapsed in this browser since the fragment arrived. The browser's
// own wall clock is never used, so a server on a fake clock (tests) or with a skewed clock counts right.
(function () {
  "use strict";
  var timer = null;
  var started = new WeakMap(); // container -> [server now in ms, performance.now() when it arrived]

  function parse(iso) {
    var ms = Date.parse(iso || "");
    return isNaN(ms) ? null : ms;
  }

  function two(n) { return (n < 10 ? "0" : "") + n; }

  // The inventory's style (reverie.core.working_keys.remaining): 45s, 4m32s, 4h08m, 3d04h, cut, never rounded up.
  function remaining(seconds) {
    var left = Math.max(0, Math.floor(seconds));
    if (left < 60) { return left + "s"; }
    if (left < 3600) { return Math.floor(left / 60) + "m" + two(left % 60) + "s"; }
    if (left < 86400) { return Math.floor(left / 3600) + "h" + two(Math.floor((left % 3600) / 60)) + "m"; }
    return Math.floor(left / 86400) + "d" + two(Math.floor((left % 86400) / 3600)) + "h";
  }

  function tick() {
    var boxes = document.querySelectorAll("#view [data-now]");
    var live = 0;
    boxes.forEach(function (box) {
      var start = started.get(box);
      if (!start) { return; }
      var now = start[0] + (performance.now() - start[1]);
      box.querySelectorAll("[data-expires]").forEach(function (el) {
        var expires = parse(el.getAttribute("data-expires"));
        if (expires === null) { return; }
        var left = (expires - now) / 1000;
        var row = el.closest(".wm-entry");
        if (left <= 0) {
          el.textContent = "expired";
          el.classList.add("expired");
          if (row) { row.classList.add("wm-expired"); }
        } else {
          el.textContent = remaining(left);
          live += 1;
        }
      });
    });
    if (live === 0 && timer !== null) { clearInterval(timer); timer = null; }
  }

  function init() {
    var fresh = 0;
    document.querySelectorAll("#view [data-now]").forEach(function (box) {
      if (started.has(box)) { return; }
      var now = parse(box.getAttribute("data-now"));
      if (now === null) { return; }
      started.set(box, [now, performance.now()]);
      fresh += 1;
    });
    if (fresh === 0) { return; }
    tick();
    if (timer === null) { timer = setInterval(tick, 1000); }
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.body.addEventListener("htmx:afterSettle", init);
  });
}());
