
(function () {
  "use strict";
  function sortable(table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var asc = !th.classList.contains("sorted-asc");
        Array.prototype.forEach.call(heads, function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
        th.classList.add(asc ? "sorted-asc" : "sorted-desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col];
          var vx = x.getAttribute("data-v"), vy = y.getAttribute("data-v");
          var r;
          if (vx !== null && vy !== null) { r = parseFloat(vx) - parseFloat(vy); }
          else if (vx !== null) { r = -1; } else if (vy !== null) { r = 1; }
          else { r = x.textContent.localeCompare(y.textContent, undefined, {numeric: true}); }
          return asc ? r : -r;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);

  var results = document.getElementById("results-table");
  if (results) {
    var selects = document.querySelectorAll("#results-filters select");
    var filter = function () {
      var shown = 0, total = results.tBodies[0].rows.length;
      Array.prototype.forEach.call(results.tBodies[0].rows, function (tr) {
        var ok = true;
        Array.prototype.forEach.call(selects, function (s) {
          if (s.value && tr.getAttribute("data-" + s.getAttribute("data-filter")) !== s.value) { ok = false; }
        });
        tr.style.display = ok ? "" : "none";
        if (ok) { shown += 1; }
      });
      document.getElementById("results-count").textContent = shown + " of " + total + " rows";
    };
    Array.prototype.forEach.call(selects, function (s) { s.addEventListener("change", filter); });
  }

  var data = JSON.parse(document.getElementById("sskj-data").textContent);
  var config = {responsive: true, displaylogo: false, scrollZoom: false};
  function fail(message) {
    Array.prototype.forEach.call(document.querySelectorAll(".plot"), function (div) {
      div.innerHTML = '<p class="error">' + message + "</p>";
    });
  }
  function draw() {
    data.figures.forEach(function (f) {
      Plotly.newPlot(f.id, f.data, f.layout, config);
    });
    var select = document.getElementById("cdf-select");
    if (select && data.cdfs.length) {
      var show = function () {
        var f = data.cdfs[parseInt(select.value, 10)];
        Plotly.react("fig-cdf", f.data, f.layout, config);
      };
      select.addEventListener("change", show);
      show();
    }
    document.body.setAttribute("data-plots", "ready");
  }
  function b64bytes(text) {
    var bin = atob(text.replace(/\s+/g, ""));
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { out[i] = bin.charCodeAt(i); }
    return out;
  }
  if (typeof DecompressionStream === "undefined") {
    fail("This browser cannot decompress the inlined plotly.js (DecompressionStream is missing): " +
         "open the file in a current Chrome, Edge, Firefox or Safari.");
    document.body.setAttribute("data-plots", "unsupported");
    return;
  }
  var packed = document.getElementById("plotly-gz");
  var stream = new Blob([b64bytes(packed.textContent)]).stream().pipeThrough(new DecompressionStream("gzip"));
  new Response(stream).text().then(function (code) {
    var script = document.createElement("script");
    script.textContent = code;
    document.head.appendChild(script);
    packed.textContent = "";
    draw();
  }).catch(function (err) {
    fail("The plots could not be drawn: " + err);
    document.body.setAttribute("data-plots", "failed");
  });
})();
