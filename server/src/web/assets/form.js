/* The monitor form's enhancements. Without this script the form is complete: the Portal
   fieldset is always shown (its legend says when it applies), the custom interval is always
   offered, and "Add another" posts the form back with an empty row. With it, the Portal
   fieldset shows only for Portal monitors, the custom interval only when chosen, an alert's
   reminder only on Error alerts, and a form with problems puts the focus on their summary. */
"use strict";
(function () {
  var form = document.getElementById("monitor-form");
  if (!form) { return; }

  var portal = form.querySelector("fieldset.portal");
  function syncPortal() {
    var checked = form.querySelector("input[name=jobType]:checked");
    if (portal) { portal.hidden = !(checked && checked.value === "Portal"); }
  }
  form.querySelectorAll("input[name=jobType]").forEach(function (radio) {
    radio.addEventListener("change", syncPortal);
  });
  syncPortal();

  var preset = form.querySelector("select[name=recurrence]");
  var custom = document.getElementById("f-recurrenceCustom");
  var customField = custom && custom.closest(".field");
  function syncCustom() {
    if (preset && customField) { customField.hidden = preset.value !== "custom"; }
  }
  if (preset) { preset.addEventListener("change", syncCustom); }
  syncCustom();

  /* A reminder belongs to an Error alert: its field shows on those rows only (or when it
     holds something, so nothing typed is hidden). */
  form.querySelectorAll("select[name$='].type'][name^='alerts[']").forEach(function (kind) {
    var remind = form.querySelector("[name='" + kind.name.replace(".type", ".remindEverySeconds") + "']");
    var field = remind && remind.closest(".field");
    if (!field) { return; }
    function syncRemind() { field.hidden = kind.value !== "Error" && remind.value === ""; }
    kind.addEventListener("change", syncRemind);
    syncRemind();
  });

  var problems = document.getElementById("problems");
  if (problems) { problems.focus(); }

  /* A second click while the first submit is on its way would only wait for it. */
  form.addEventListener("submit", function (event) {
    var button = event.submitter;
    if (form.dataset.sending === "1") { event.preventDefault(); return; }
    if (!button || button.name !== "add") { form.dataset.sending = "1"; }
    window.setTimeout(function () { form.dataset.sending = ""; }, 15000);
  });
  /* Back to this page from the next one: the form may be sent again. */
  window.addEventListener("pageshow", function () { form.dataset.sending = ""; });
})();
