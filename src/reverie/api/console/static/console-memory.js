// The console's memory page script (loaded on every page; acts only on its own elements after each swap):
// changing the list's order applies the form at once (the Apply button does the same without script).
(function () {
  "use strict";
  function init() {
    document.querySelectorAll("#mem-form select[data-mem-autosubmit]:not([data-mem-ready])").forEach(function (select) {
      select.setAttribute("data-mem-ready", "1");
      select.addEventListener("change", function () {
        var form = select.form;
        if (form && form.requestSubmit) { form.requestSubmit(); }
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.body.addEventListener("htmx:afterSettle", init);
  });
}());
