/* tools/site.py's html_search_scorer (Sphinx puts it at the top of language_data.js): the search results by
   Sphinx's own scores (a word in a title counts more than a word in the text) and, among equal scores, in the
   book's reading order (the sidebar's table of contents) rather than by title as strings ("1.", "10.", "11.", ...).
   Sphinx's default weights, unchanged. */
var Scorer = {
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: {0: 15, 1: 5, 2: -5},
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
  // result: [docname, title, anchor, descr, score, filename, kind]; a higher score is shown first. The reading
  // order adds less than 0.001: it breaks ties and never outweighs a difference of Sphinx's scores.
  score: function (result) {
    var order = Scorer.readingOrder();
    var place = order.indexOf(result[0]);
    if (place < 0) place = order.length;   // a page outside the table of contents (the index): last
    return result[4] + (order.length - place) * 1e-6;
  },
  // the pages in the order of the sidebar's links (chapter 0, 1, 2, ..., then the reference pages)
  readingOrder: function () {
    if (!Scorer._order) {
      var names = [];
      document.querySelectorAll(".sidebar-tree a.reference[href]").forEach(function (link) {
        var name = link.getAttribute("href").split("#")[0].split("?")[0].replace(/\.html$/, "");
        if (name && names.indexOf(name) < 0) names.push(name);
      });
      Scorer._order = names;
    }
    return Scorer._order;
  },
};
