/* tools/site.py: the book site's script (no network, nothing loaded). */
(function () {
  "use strict";
  // Search result summaries are fetched from the result pages: browsers refuse fetch() on file://, so a site
  // opened from disk lists the results without them (a published site shows them).
  // (DOCUMENTATION_OPTIONS is a global const of documentation_options.js, loaded before this file: not on window)
  if (location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  }
  // A static explorer's iframe (its page posts its height, see tools/site.py) grows to its content.
  window.addEventListener("message", function (event) {
    var data = event.data;
    if (!data || typeof data.siteExplorerHeight !== "number") return;
    document.querySelectorAll("iframe.site-explorer").forEach(function (frame) {
      if (frame.contentWindow === event.source) frame.style.height = Math.ceil(data.siteExplorerHeight) + "px";
    });
  });
})();
