/* Proposing an XPath for an element: its id where the id is unique and not generated, else
   its stablest class (the one selecting the fewest elements), else its position from the
   root. One proposer for the two places that propose: the point-and-click picker (loaded
   before picker.js, on the frame's document) and the step recorder (evaluated by the server
   in the recording's browser tab, on the live page), so both name an element alike.
   `wachetPropose(element, document)` is its only name. */
var wachetPropose = (function () {
  "use strict";
  var HTML_NS = "http://www.w3.org/1999/xhtml";

  function quote(text) {
    if (text.indexOf('"') < 0) return '"' + text + '"';
    if (text.indexOf("'") < 0) return "'" + text + "'";
    return null;
  }

  /* Names that build tools generate (css-1x2y3z, sc-bdVaJa, Button_root__3xYz1, a8f3c2d1)
     change with every release of the site: an XPath on them would break. */
  function generated(name) {
    if (!name || /[^A-Za-z0-9_-]/.test(name) || /^\d/.test(name)) return true;
    if (/^(css|sc|jsx|emotion|styled|svelte|chakra|mui|tw)-/i.test(name)) return true;
    return name.split(/[-_]+/).some(function (part) {
      var digits = /\d/.test(part);
      return (part.length >= 4 && digits && /[a-z]/i.test(part)) ||
        (part.length >= 6 && digits && /^[0-9a-f]+$/i.test(part));
    });
  }

  function countOf(doc, xpath) {
    try {
      return doc.evaluate("count(" + xpath + ")", doc, null, XPathResult.NUMBER_TYPE, null).numberValue;
    } catch (e) {
      return 0;
    }
  }

  function positional(el) {
    var parts = [];
    for (var node = el; node && node.nodeType === 1; node = node.parentElement) {
      var name = node.localName;
      if (name === "html" || name === "body" || name === "head") {
        parts.unshift(name);
        continue;
      }
      var index = 1;
      for (var s = node.previousElementSibling; s; s = s.previousElementSibling) {
        if (s.localName === name) index++;
      }
      parts.unshift(name + "[" + index + "]");
    }
    return "/" + parts.join("/");
  }

  function propose(el, doc) {
    // XPath names of SVG or MathML elements need namespaces: pick their HTML container.
    while (el.parentElement && el.namespaceURI !== HTML_NS) el = el.parentElement;
    var tag = el.localName;
    var id = el.getAttribute("id");
    if (id && !generated(id)) {
      var byId = "//*[@id=" + quote(id) + "]";
      if (countOf(doc, byId) === 1) return byId;
    }
    var best = null, fewest = Infinity;
    var whole = (el.getAttribute("class") || "").trim();
    Array.prototype.forEach.call(el.classList, function (name) {
      if (generated(name)) return;
      var xpath = "//" + tag + "[contains(concat(' ', normalize-space(@class), ' '), ' " + name + " ')]";
      var n = countOf(doc, xpath);
      // The short form reads better where it selects the same elements.
      var short = "//" + tag + "[@class=" + quote(name) + "]";
      if (whole === name && countOf(doc, short) === n) xpath = short;
      if (n > 0 && n < fewest) {
        best = xpath;
        fewest = n;
      }
    });
    return best || positional(el);
  }

  return propose;
})();
