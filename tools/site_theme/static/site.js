/* tools/site.py: the book site's script (no network, nothing loaded). */
(function () {
  "use strict";
  // Search result summaries are fetched from the result pages: browsers refuse fetch() on file://, so a site
  // opened from disk lists the results without them (a published site shows them).
  // (DOCUMENTATION_OPTIONS is a global const of documentation_options.js, loaded before this file: not on window)
  if (location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  }
  // The language switch in Furo's header bar on a phone (site.css): a copy of the page's top-right link.
  document.addEventListener("DOMContentLoaded", function () {
    var twin = document.querySelector(".content-icon-container .site-language");
    var bar = document.querySelector(".mobile-header .header-right");
    if (!twin || !bar) return;
    var copy = twin.cloneNode(true);
    copy.className = "site-language site-language-header";
    bar.insertBefore(copy, bar.firstChild);
    document.documentElement.classList.add("site-header-language");
  });
  // A static explorer's iframe (its page posts its height, see tools/site.py) grows to its content.
  window.addEventListener("message", function (event) {
    var data = event.data;
    if (!data || typeof data.siteExplorerHeight !== "number") return;
    document.querySelectorAll("iframe.site-explorer").forEach(function (frame) {
      if (frame.contentWindow === event.source) frame.style.height = Math.ceil(data.siteExplorerHeight) + "px";
    });
  });
})();
