(function () {
  "use strict";
  // history.html: sortable tables; trend figures (one per setup and metric, a line per shape) filtered by
  // chip, engine, shape and metric, drawn FIGURES_PER_PAGE at a time (a "more" button draws the next ones).
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sskjSortable);

  var data = JSON.parse(document.getElementById("sskj-history").textContent);
  var holder = document.getElementById("history-figures");
  var more = document.getElementById("history-more");
  var count = document.getElementById("history-count");
  var selects = Array.prototype.slice.call(document.querySelectorAll("[data-hfilter]"));
  var config = {responsive: false, displaylogo: false, scrollZoom: false};
  var COLORS = ["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880",
                "#FF97FF", "#FECB52"];
  var MARKS = {regression: ["triangle-up", "#b3261e"], improvement: ["triangle-down", "#1e7b34"],
               "not confirmed": ["circle-open", "#5f6b76"], outlier: ["diamond-open", "#8a5a00"],
               "not to be believed": ["x-thin-open", "#b3261e"]};
  var matching = [], drawn = 0;

  function filters() {
    var out = {};
    selects.forEach(function (s) { out[s.getAttribute("data-hfilter")] = s.value; });
    return out;
  }
  function hover(run) {
    return run[0] + "<br>" + (run[1] || "date unknown") + (run[4] ? " (" + run[4] + ")" : "") +
      "<br>engine " + (run[2] || "unknown") + (run[3] ? "<br>image " + run[3] : "");
  }
  function traces(f, shape) {
    var out = [];
    f.lines.forEach(function (line, i) {
      if (shape && line.shape !== shape) { return; }
      out.push({type: "scatter", mode: line.x.length > 60 ? "lines" : "lines+markers", name: line.shape,
                x: line.x, y: line.y,
                line: {color: COLORS[i % COLORS.length], width: 1.5,
                       dash: ["solid", "dot", "dash"][Math.floor(i / COLORS.length) % 3]},
                marker: {size: 5}, text: line.x.map(function (x) { return hover(f.runs[x]); }),
                hovertemplate: "%{y}<br>%{text}<extra>" + line.shape + "</extra>"});
    });
    Object.keys(MARKS).forEach(function (kind) {
      var marks = f.marks.filter(function (m) { return m.kind === kind && (!shape || m.shape === shape); });
      if (!marks.length) { return; }
      out.push({type: "scatter", mode: "markers", name: kind, x: marks.map(function (m) { return m.x; }),
                y: marks.map(function (m) { return m.y; }),
                marker: {symbol: MARKS[kind][0], size: 13, color: MARKS[kind][1], line: {width: 1.5, color: MARKS[kind][1]}},
                text: marks.map(function (m) { return m.shape + ": " + m.text + "<br>" + hover(f.runs[m.x]); }),
                hovertemplate: "%{text}<extra></extra>"});
    });
    return out;
  }
  function ticks(f) {
    // the engine version under the first run of each version (at most ~12 labels)
    var vals = [], text = [], last = null, gap = Math.max(1, Math.floor(f.runs.length / 12));
    f.runs.forEach(function (run, i) {
      var v = run[2] || "unknown";
      if (v !== last && (!vals.length || i - vals[vals.length - 1] >= gap)) { vals.push(i); text.push(v); }
      last = v;
    });
    return {vals: vals, text: text};
  }
  function draw(f, shape) {
    var div = document.createElement("div");
    div.className = "plot";
    div.id = f.id;
    holder.appendChild(div);
    var width = Math.max(holder.clientWidth - 2, 300);  // the box's borders
    var t = ticks(f);
    var log = Boolean(f.ylog) && !shape;  // one shape alone: a linear axis shows its steps best
    var layout = {
      title: {text: f.title, font: {size: 14}, x: 0.01, xanchor: "left"}, width: width, height: 380,
      margin: {l: 70, r: 20, t: 50, b: 90}, hovermode: "closest", showlegend: true,
      legend: {orientation: "h", y: -0.32},
      xaxis: {title: {text: "runs in order (engine version where it changes)"}, tickvals: t.vals, ticktext: t.text,
              tickangle: -30, zeroline: false, range: [-0.5, Math.max(f.runs.length - 0.5, 0.5)]},
      yaxis: log ? {title: {text: f.metric + " (log scale)"}, type: "log", tickvals: f.ylog[0], ticktext: f.ylog[1]}
        : {title: {text: f.metric}}
    };
    return Plotly.newPlot(div, traces(f, shape), layout, config);
  }
  function page() {
    var shape = filters().shape;
    var next = matching.slice(drawn, drawn + data.perPage);
    drawn += next.length;
    next.forEach(function (f) { draw(f, shape); });
    count.textContent = "figures " + Math.min(drawn, matching.length) + " of " + matching.length;
    more.style.display = drawn < matching.length ? "" : "none";
  }
  function refresh() {
    var want = filters();
    holder.innerHTML = "";
    drawn = 0;
    matching = data.figures.filter(function (f) {
      return (!want.chip || f.chip === want.chip) && (!want.engine || f.engine === want.engine) &&
        (!want.metric || f.metric === want.metric) &&
        (!want.shape || f.lines.some(function (l) { return l.shape === want.shape; }));
    });
    page();
    document.body.setAttribute("data-plots", "ready");
  }
  // figures take their box's width: redrawn at the new width when the window is resized
  sskjOnResize(function () {
    var width = Math.max(holder.clientWidth - 2, 300);
    return Promise.all(Array.prototype.map.call(holder.querySelectorAll(".plot"), function (div) {
      return Plotly.relayout(div, {width: width});
    }));
  });
  sskjLoadPlotly(function () {
    selects.forEach(function (s) { s.addEventListener("change", refresh); });
    more.addEventListener("click", page);
    refresh();
  }, function (message, state) {
    holder.innerHTML = '<p class="error">' + message + "</p>";
    document.body.setAttribute("data-plots", state);
  });
})();
