
// Long tables and lists (render/longtables.py): a table of many rows (a list of many items) arrives with its first
// rows drawn and the others packed (#sskj-rows: the gzip of a JSON list, one list of row HTML per long table, base 91). They are put back
// on demand: the table's "Show all" button, a click on one of its headers (sorted over every row), a filter of
// the results table (filtered over every row). body[data-long-tables] is "folded", then "loading", "ready".
(function () {
  "use strict";
  var packed = document.getElementById("sskj-rows");
  if (!packed) { return; }
  document.body.setAttribute("data-long-tables", "folded");
  var unpacked = null;
  function rows() {
    if (!unpacked) {
      document.body.setAttribute("data-long-tables", "loading");
      unpacked = sskjUnpack(packed.textContent).then(function (text) {
        packed.textContent = "";
        return JSON.parse(text);
      });
    }
    return unpacked;
  }
  function unfold(table) {
    var key = table.getAttribute("data-long");
    if (key === null) { return Promise.resolve(); }
    return rows().then(function (all) {
      if (table.getAttribute("data-long") === null) { return; }  // another call got here first
      (table.tBodies ? table.tBodies[0] : table).insertAdjacentHTML("beforeend", all[parseInt(key, 10)].join(""));
      table.removeAttribute("data-long");
      Array.prototype.forEach.call(document.querySelectorAll('p.long-table[data-long="' + key + '"]'),
                                   function (p) { p.parentNode.removeChild(p); });
      if (!document.querySelector("table[data-long], ul[data-long]")) { document.body.setAttribute("data-long-tables", "ready"); }
      else { document.body.setAttribute("data-long-tables", "folded"); }
    }).catch(function (err) {
      Array.prototype.forEach.call(document.querySelectorAll('p.long-table[data-long="' + key + '"]'),
                                   function (p) { p.textContent = "The other rows could not be shown: " + err; });
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table[data-long]"), function (table) {
    // a click on a header of a folded table: every row first, then the sort (the header's own listener)
    table.addEventListener("click", function (event) {
      var th = event.target.closest ? event.target.closest("th") : null;
      if (!th || table.getAttribute("data-long") === null) { return; }
      event.stopPropagation();
      unfold(table).then(function () { th.click(); });
    }, true);
  });
  Array.prototype.forEach.call(document.querySelectorAll("button[data-long]"), function (button) {
    button.addEventListener("click", function () {
      var table = document.querySelector('[data-long="' + button.getAttribute("data-long") + '"]:not(p):not(button)');
      if (table) { button.disabled = true; unfold(table); }
    });
  });
  var filters = document.getElementById("results-filters");
  var results = document.getElementById("results-table");
  if (filters && results) {
    ["change", "input"].forEach(function (kind) {
      filters.addEventListener(kind, function (event) {
        if (results.getAttribute("data-long") === null) { return; }
        event.stopPropagation();
        unfold(results).then(function () { event.target.dispatchEvent(new Event(kind)); });
      }, true);
    });
  }
})();
