/* The step recorder's screenshot is an image button of its form: a click on it posts where it
   was clicked. Without this script that point is in the picture's shown pixels, right while
   the picture is shown at its own size; this script turns it into the picture's own pixels
   (the page's), whatever size the screen shows it at, before the form goes. */
(function () {
  "use strict";
  var shot = document.getElementById("record-shot");
  var x = document.getElementById("record-x");
  var y = document.getElementById("record-y");
  if (!shot || !x || !y) return;
  shot.addEventListener("click", function (event) {
    var box = shot.getBoundingClientRect();
    var w = Number(shot.dataset.width), h = Number(shot.dataset.height);
    if (!box.width || !box.height || !w || !h) return;
    x.value = Math.round((event.clientX - box.left) * w / box.width);
    y.value = Math.round((event.clientY - box.top) * h / box.height);
  });
  // One action at a time: the page answers when the browser on the server has done it.
  var form = document.getElementById("record-form");
  if (form) {
    form.addEventListener("submit", function () {
      form.setAttribute("aria-busy", "true");
    });
  }
})();
