
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sskjSortable);

  var results = document.getElementById("results-table");
  if (results) {
    // a list of values (exact match), or, for a column of many values, a text box (the value contains the text)
    var selects = Array.prototype.slice.call(document.querySelectorAll("#results-filters [data-filter]"));
    var filter = function () {
      var shown = 0, total = results.tBodies[0].rows.length;
      var active = selects.filter(function (s) { return s.value; }).map(function (s) {
        return {key: "data-" + s.getAttribute("data-filter"), value: s.value.toLowerCase(),
                contains: s.getAttribute("data-match") === "contains", exact: s.value};
      });
      Array.prototype.forEach.call(results.tBodies[0].rows, function (tr) {
        var ok = active.every(function (f) {
          var v = tr.getAttribute(f.key) || "";
          return f.contains ? v.toLowerCase().indexOf(f.value) !== -1 : v === f.exact;
        });
        tr.style.display = ok ? "" : "none";
        if (ok) { shown += 1; }
      });
      document.getElementById("results-count").textContent = shown + " of " + total + " rows";
    };
    selects.forEach(function (s) { s.addEventListener(s.tagName === "INPUT" ? "input" : "change", filter); });
  }

  var data = JSON.parse(document.getElementById("sskj-data").textContent);
  // The page sizes each figure itself: plotly's `responsive` keeps a fixed layout.height while the box
  // shrinks (lower panels cut, titles over the next figure). Here the figure takes its box's width, as many
  // panels per row as fit (PANEL_MIN_PX each) and the height that goes with them; redrawn on resize.
  var config = {responsive: false, displaylogo: false, scrollZoom: false};
  var PANEL_MIN_PX = 360;
  var shown = {};
  function fitted(div, layout) {
    var width = Math.max(div.clientWidth, 200);
    var places = (layout.meta && layout.meta.places) || {};
    var most = Object.keys(places).length;
    var out = JSON.parse(JSON.stringify(layout));
    out.autosize = false;
    out.width = width;
    if (most) {
      var cols = Math.max(1, Math.min(most, Math.floor((width - 90) / PANEL_MIN_PX)));
      var place = places[String(cols)];
      out.height = place.height;
      out.legend.y = place.legend_y;
      place.x.forEach(function (domain, i) {
        var suffix = i === 0 ? "" : String(i + 1);
        out["xaxis" + suffix].domain = domain;
        out["yaxis" + suffix].domain = place.y[i];
        out.annotations[i].x = (domain[0] + domain[1]) / 2;
        out.annotations[i].y = place.y[i][1];
      });
    }
    wrapTitle(out, width);
    div.style.height = out.height + (div.offsetHeight - div.clientHeight) + "px";  // + the box's borders
    return out;
  }
  // A title longer than the figure is wide is broken into lines at spaces (plotly draws one line, cut at the
  // edge); the figure grows by a line height per added line, so the panels keep their size and place.
  var measure = document.createElement("canvas").getContext("2d");
  var decode = document.createElement("textarea");
  function wrapTitle(out, width) {
    var title = out.title;
    if (!title || !title.text) { return; }
    var size = (title.font && title.font.size) || 16;
    measure.font = size + 'px "Open Sans", verdana, arial, sans-serif';
    var room = width - 30, lines = [], line = "";
    title.text.split(" ").forEach(function (word) {
      var next = line ? line + " " + word : word;
      decode.innerHTML = next;
      if (line && measure.measureText(decode.value).width > room) { lines.push(line); line = word; }
      else { line = next; }
    });
    lines.push(line);
    var extra = (lines.length - 1) * ((out.meta && out.meta.title_line_px) || 22);
    title.text = lines.join("<br>");
    // plotly centres the lines of a title on its anchor (1.3 em apart): half of them would rise into the
    // mode bar's row; the pad moves them down by as much
    title.pad = {t: ((title.pad && title.pad.t) || 0) + Math.ceil((lines.length - 1) * 1.3 * size / 2)};
    out.margin.t += extra;
    out.height += extra;
  }
  function plot(id, f) {
    var div = document.getElementById(id);
    shown[id] = f;
    return Plotly.react(div, f.data, fitted(div, f.layout), config);
  }
  function fail(message) {
    Array.prototype.forEach.call(document.querySelectorAll(".plot"), function (div) {
      div.innerHTML = '<p class="error">' + message + "</p>";
    });
  }
  // One figure a task, in the page's order: the first is on screen before the others are laid out (a curves
  // figure of 12 panels takes a second or more), and the page answers clicks and scrolling between them.
  // body[data-plots] is "ready" once every figure is drawn.
  function draw() {
    var jobs = data.figures.map(function (f) { return function () { return plot(f.id, f); }; });
    var select = document.getElementById("cdf-select");
    if (select && data.cdfs.length) {
      var show = function () { return plot("fig-cdf", data.cdfs[parseInt(select.value, 10)]); };
      select.addEventListener("change", show);
      jobs.push(show);
    }
    function next() {
      if (!jobs.length) {
        sskjOnResize(function () {
          return Promise.all(Object.keys(shown).map(function (id) { return plot(id, shown[id]); }));
        });
        document.body.setAttribute("data-plots", "ready");
        return;
      }
      Promise.resolve(jobs.shift()()).then(function () { setTimeout(next, 0); });
    }
    next();
  }
  sskjLoadPlotly(draw, function (message, state) {
    fail(message);
    document.body.setAttribute("data-plots", state);
  });
})();
