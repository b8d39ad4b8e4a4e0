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

// The text of packed text (render/packing.py pack(): gzip, then base 91: the byte count, a space, two characters
// of the alphabet below for every 13 bits; plotly.js, a long table's rows, history.html's data), decompressed by
// the browser's own DecompressionStream: a promise.
var SSKJ_ALPHABET = "!\"#$%'()*+,-./0123456789:;=?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";
function sskjDecode(text) {
  "use strict";
  var space = text.indexOf(" ");
  var size = parseInt(text.slice(0, space), 10);
  var value = new Int16Array(128).fill(-1);
  for (var a = 0; a < SSKJ_ALPHABET.length; a++) { value[SSKJ_ALPHABET.charCodeAt(a)] = a; }
  var bytes = new Uint8Array(size), acc = 0, bits = 0, out = 0;
  for (var i = space + 1; out < size && i + 1 < text.length; i += 2) {
    var c = text.charCodeAt(i), d = text.charCodeAt(i + 1);
    var lo = c < 128 ? value[c] : -1, hi = d < 128 ? value[d] : -1;
    if (lo < 0 || hi < 0) { throw new Error("packed text: a character outside its alphabet at " + i); }
    acc = ((acc << 13) | (lo + 91 * hi)) & 0x1fffff;  // at most 7 + 13 bits pending
    bits += 13;
    while (bits >= 8 && out < size) { bits -= 8; bytes[out++] = (acc >> bits) & 255; }
  }
  if (out < size) { throw new Error("packed text: cut short (" + out + " of " + size + " bytes)"); }
  return bytes;
}
function sskjUnpack(text) {
  "use strict";
  return sskjUnpackResponse(text).text();
}
// The bytes of packed text: a promise of a Uint8Array.
function sskjUnpackBytes(text) {
  "use strict";
  return sskjUnpackResponse(text).arrayBuffer().then(function (buffer) { return new Uint8Array(buffer); });
}
function sskjUnpackResponse(text) {
  "use strict";
  var bytes = sskjDecode(text.trim());
  return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip")));
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
