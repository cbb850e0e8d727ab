/* Point-and-click selection. The fetched page is in a frame sandboxed without scripts but of
   this origin, so this script (running in the interface, never in the page) works on the
   frame's document: it proposes an XPath for a clicked element (propose.js, loaded before
   it: an id or a stable class where there is one, else the element's position), highlights
   everything the XPaths match, and asks the server for the value a check would store, which
   is always the engine's. Without this script the page still works: the fields and the Try
   button. */
(function () {
  "use strict";
  var frame = document.getElementById("pick-frame");
  var form = document.getElementById("pick-form");
  if (!frame || !form) return;
  var xInput = document.getElementById("pick-xpath");
  var exInput = document.getElementById("pick-exclude");
  var modes = document.getElementById("pick-mode");
  var count = document.getElementById("pick-count");
  var valueBox = document.getElementById("pick-value");
  var result = document.getElementById("pick-result");
  var useThis = document.getElementById("use-this");
  var token = form.elements.token.value;
  var PICKED = "wachet-picked", IGNORED = "wachet-ignored", HOVER = "wachet-hover";
  var STYLE =
    "." + PICKED + "{outline:3px solid #4338ca!important;outline-offset:1px;background-color:rgba(67,56,202,.14)!important}" +
    "." + IGNORED + "{outline:3px dashed #b91c1c!important;outline-offset:1px;background-color:rgba(185,28,28,.12)!important;text-decoration:line-through!important}" +
    "." + HOVER + "{outline:2px solid #2563eb!important;cursor:crosshair!important}" +
    "html{cursor:crosshair}";
  var attached = null;
  var asked = 0;
  var timer = null;
  modes.hidden = false;

  function mode() {
    var checked = modes.querySelector("input:checked");
    return checked ? checked.value : "watch";
  }

  /* The marks are classes in the page's own document: every evaluation (the proposal's and
     the highlight's) runs with them all removed, so they never change what an XPath on
     `@class` selects. */
  function unmark(doc) {
    [PICKED, IGNORED, HOVER].forEach(function (cls) {
      Array.prototype.forEach.call(doc.querySelectorAll("." + cls), function (el) {
        el.classList.remove(cls);
        if (!el.getAttribute("class")) el.removeAttribute("class");
      });
    });
  }

  function selected(doc, xpath) {
    var out = [];
    if (!xpath.trim()) return out;
    var found;
    try {
      found = doc.evaluate(xpath, doc, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
    } catch (e) {
      return out; // A scalar or a broken XPath selects nothing to show; the server says why.
    }
    for (var i = 0; i < found.snapshotLength; i++) {
      var node = found.snapshotItem(i);
      var el = node.nodeType === 1 ? node : (node.ownerElement || node.parentElement);
      if (el) out.push(el);
    }
    return out;
  }

  function highlight() {
    if (!attached) return;
    unmark(attached);
    var ignored = selected(attached, exInput.value);
    var picked = selected(attached, xInput.value);
    ignored.forEach(function (el) { el.classList.add(IGNORED); });
    picked.forEach(function (el) { el.classList.add(PICKED); });
  }

  function fieldError(input, hintId, errorId, message) {
    var error = document.getElementById(errorId);
    if (message) {
      if (!error) {
        error = document.createElement("p");
        error.className = "field-error";
        error.id = errorId;
        input.parentNode.appendChild(error);
      }
      error.textContent = message;
      input.setAttribute("aria-invalid", "true");
      input.setAttribute("aria-describedby", errorId);
    } else {
      if (error) error.remove();
      input.removeAttribute("aria-invalid");
      if (document.getElementById(hintId)) input.setAttribute("aria-describedby", hintId);
      else input.removeAttribute("aria-describedby");
    }
  }

  function show(answer) {
    count.textContent = answer.summary || "";
    var alert = document.getElementById("pick-error");
    if (answer.error) {
      if (!alert) {
        alert = document.createElement("p");
        alert.className = "alert";
        alert.id = "pick-error";
        count.after(alert);
      }
      alert.textContent = answer.error;
    } else if (alert) {
      alert.remove();
    }
    valueBox.hidden = answer.value == null;
    valueBox.textContent = answer.value == null ? "" : answer.value;
    var errors = answer.fieldErrors || {};
    fieldError(xInput, "pick-xpath-hint", "pick-xpath-error", errors.xPath);
    fieldError(exInput, "pick-exclude-hint", "pick-exclude-error", errors.excludeXPath);
    if (answer.useThis) useThis.href = answer.useThis;
  }

  function refresh() {
    highlight();
    var params = new URLSearchParams({ token: token, xPath: xInput.value, excludeXPath: exInput.value });
    var mine = ++asked;
    result.setAttribute("aria-busy", "true");
    history.replaceState(null, "", "/monitors/pick?" + params.toString());
    fetch("/monitors/pick/value?" + params.toString(), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.json(); })
      .then(function (answer) { if (mine === asked) show(answer); })
      .catch(function () {
        if (mine === asked) show({ error: "The server could not be asked; use the Try button.", value: null });
      })
      .then(function () { if (mine === asked) result.removeAttribute("aria-busy"); });
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 300);
  }

  function onClick(event) {
    event.preventDefault();
    event.stopPropagation();
    var target = event.target.nodeType === 1 ? event.target : event.target.parentElement;
    if (!target || !attached) return;
    var wasIgnored = target.classList.contains(IGNORED);
    unmark(attached);
    var xpath = wachetPropose(target, attached);
    if (mode() === "ignore") {
      var current = exInput.value.trim();
      // Each click adds to what is ignored; a click on something already ignored keeps it.
      if (!wasIgnored) exInput.value = current ? current + " | " + xpath : xpath;
    } else {
      xInput.value = xpath;
    }
    refresh();
  }

  function attach() {
    var doc = frame.contentDocument;
    // Before the frame's page has come, its document is the empty initial one; while it is
    // still being parsed, it may have no element yet: its load event calls again.
    if (!doc || doc === attached || doc.readyState === "loading" || !doc.documentElement ||
        doc.location.pathname.indexOf("/monitors/pick/frame/") !== 0) return;
    attached = doc;
    var style = doc.createElement("style");
    style.textContent = STYLE;
    (doc.head || doc.documentElement).appendChild(style);
    doc.addEventListener("click", onClick, true);
    doc.addEventListener("submit", function (event) { event.preventDefault(); }, true);
    doc.addEventListener("mouseover", function (event) {
      if (event.target.classList) event.target.classList.add(HOVER);
    }, true);
    doc.addEventListener("mouseout", function (event) {
      if (event.target.classList) event.target.classList.remove(HOVER);
    }, true);
    highlight();
  }

  frame.addEventListener("load", attach);
  attach();
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    refresh();
  });
  xInput.addEventListener("input", later);
  exInput.addEventListener("input", later);
})();
