// memframe ui: a little progressive enhancement. Every page works without it.
(function () {
  "use strict";

  // a form that destroys something asks first (data-confirm="question")
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.getAttribute("data-confirm"))) {
        event.preventDefault();
      }
    });
  });

  // filter selects apply at once
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () {
      if (select.form) {
        select.form.requestSubmit();
      }
    });
  });

  // "/" focuses the search box, as on many sites
  var search = document.getElementById("search");
  if (search) {
    document.addEventListener("keydown", function (event) {
      var typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
      if (event.key === "/" && !typing) {
        event.preventDefault();
        search.focus();
      }
    });
  }

  // an edit form with unsaved changes says so, and warns before the page is left
  document.querySelectorAll("form[data-dirty-warning]").forEach(function (form) {
    var dirty = false;
    form.addEventListener("input", function () {
      dirty = true;
      form.classList.add("dirty");
    });
    form.addEventListener("submit", function () {
      dirty = false;
    });
    window.addEventListener("beforeunload", function (event) {
      if (dirty) {
        event.preventDefault();
      }
    });
  });
})();
