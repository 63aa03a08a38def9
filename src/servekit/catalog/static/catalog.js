// The catalog's filters apply as soon as one changes. Without JavaScript the page works
// the same through its Filter button; this file is all the script the pages load.
document.querySelectorAll("form.filters select").forEach(function (select) {
  select.addEventListener("change", function () {
    select.form.requestSubmit();
  });
});
