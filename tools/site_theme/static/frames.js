/* tools/site.py: a figure is never shown shorter than MIN_FIGURE px (or its own height, if smaller), so that the
   panels of a wide figure stay readable on a phone (about 150 px each): fitted to the text column, a figure
   that would be shorter gets that height, and its output scrolls sideways (frames.css). */
(function () {
  "use strict";
  var MIN_FIGURE = 220;
  function fit(image) {
    if (!image.naturalWidth) return;
    image.classList.remove("site-wide-figure");
    image.style.width = "";
    var least = Math.min(MIN_FIGURE, image.naturalHeight);
    if (image.getBoundingClientRect().height >= least - 0.5) return;
    image.classList.add("site-wide-figure");
    image.style.width = Math.ceil(image.naturalWidth * least / image.naturalHeight) + "px";
  }
  function fitAll() { document.querySelectorAll("div.cell_output img").forEach(fit); }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("div.cell_output img").forEach(function (image) {
      if (image.complete) fit(image); else image.addEventListener("load", function () { fit(image); });
    });
  });
  var width = window.innerWidth;
  window.addEventListener("resize", function () { if (window.innerWidth !== width) { width = window.innerWidth; fitAll(); } });
})();
