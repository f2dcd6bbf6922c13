// The console's entry page script (loaded on every page; acts only on its own elements after each swap).
// The page is server-rendered and its actions are htmx buttons and forms; this only keeps the version
// picker honest: "From" and "To" may not be the same version (a diff of a version with itself says nothing).
(function () {
  "use strict";

  function initCompare(form) {
    if (form.dataset.entryReady) { return; }
    form.dataset.entryReady = "1";
    var a = form.querySelector("select[name=a]"), b = form.querySelector("select[name=b]");
    var submit = form.querySelector("button[type=submit]");
    if (!a || !b || !submit) { return; }
    function sync() { submit.disabled = a.value === b.value; }
    a.addEventListener("change", sync);
    b.addEventListener("change", sync);
    sync();
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.body.addEventListener("htmx:afterSettle", function () {
      document.querySelectorAll("#view form.entry-compare").forEach(initCompare);
    });
  });
}());
