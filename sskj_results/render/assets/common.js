// Shared by the pages' scripts (page.js, history.js): sortable tables and the plotly loader.

// A click on a header sorts the table by that column: by the cells' data-v numbers where they have them, else
// by their text (numbers within it compared as numbers); a second click reverses.
function sskjSortable(table) {
  "use strict";
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

// The text of packed text (render/packing.py pack(): gzip, then base 125, whose digits are the ASCII characters
// U+0001-U+007F but CR and `<`; 7 digits are 6 bytes; plotly.js, history.html's data), decompressed by the
// browser's own DecompressionStream: a promise.
function sskjUnpack(text) {
  "use strict";
  var digit = new Int16Array(128), n = text.length, tail = n % 7, c, d, i, j, acc, hi, lo;
  for (c = 1, d = 0; c < 128; c++) { if (c !== 13 && c !== 60) { digit[c] = d++; } }
  var size = Math.floor(n / 7) * 6 + (tail ? tail - 1 : 0), out = new Uint8Array(size), o = 0;
  for (i = 0; i < n; i += 7) {
    acc = 0;  // a last group of fewer than 7 digits is completed with the largest digit (packing.decode)
    for (j = i; j < i + 7; j++) { acc = acc * 125 + (j < n ? digit[text.charCodeAt(j) & 127] : 124); }
    hi = Math.floor(acc / 4294967296);  // exact: acc < 125^7 < 2^53
    lo = acc - hi * 4294967296;
    var bytes = [(hi >>> 8) & 255, hi & 255, lo >>> 24, (lo >>> 16) & 255, (lo >>> 8) & 255, lo & 255];
    for (j = 0; j < 6 && o < size; j++) { out[o++] = bytes[j]; }
  }
  var stream = new Blob([out]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}

// The pages' plotly.js is inlined packed (#plotly-gz, sskjUnpack): unpacked and run; then ready(), or
// failed(message, state) with state "unsupported" or "failed".
function sskjLoadPlotly(ready, failed) {
  "use strict";
  if (typeof DecompressionStream === "undefined") {
    failed("This browser cannot decompress the inlined plotly.js (DecompressionStream is missing): " +
           "open the file in a current Chrome, Edge, Firefox or Safari.", "unsupported");
    return;
  }
  var packed = document.getElementById("plotly-gz");
  sskjUnpack(packed.textContent).then(function (code) {
    var script = document.createElement("script");
    script.textContent = code;
    document.head.appendChild(script);
    packed.textContent = "";
    ready();
  }).catch(function (err) {
    failed("The plots could not be drawn: " + err, "failed");
  });
}

// After the window stops resizing (150 ms), redraw() (a promise); body[data-plots] says "resizing" until it is done.
function sskjOnResize(redraw) {
  "use strict";
  var pending = null;
  window.addEventListener("resize", function () {
    if (pending) { clearTimeout(pending); }
    document.body.setAttribute("data-plots", "resizing");
    pending = setTimeout(function () {
      pending = null;
      redraw().then(function () { document.body.setAttribute("data-plots", "ready"); });
    }, 150);
  });
}
