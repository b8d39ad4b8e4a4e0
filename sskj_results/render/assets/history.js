(function () {
  "use strict";
  // history.html: sortable tables; trend figures (one per setup and metric, a line per shape) filtered by
  // chip, engine, shape and metric, drawn FIGURES_PER_PAGE at a time (a "more" button draws the next ones). The
  // data are compact (render/history.py figure_data, packed): a figure is built here when it is drawn.
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sskjSortable);

  var data = null;
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
  var PREDICT = 4;  // render/history.py PREDICT
  var matching = [], drawn = 0;

  function filters() {
    var out = {};
    selects.forEach(function (s) { out[s.getAttribute("data-hfilter")] = s.value; });
    return out;
  }
  function text(i) { return i < 0 ? null : data.text[i]; }
  function hover(f) {
    // the hover text of the figure's drawn runs, by their place among the setup's runs
    var out = {}, runs = data.runs;
    f.hover[0].forEach(function (x, k) {
      var r = f.hover[1][k], note = text(runs.note[r]), image = text(runs.image[r]);
      out[x] = text(runs.id[r]) + "<br>" + (text(runs.time[r]) || "date unknown") + (note ? " (" + note + ")" : "") +
        "<br>engine " + (text(runs.version[r]) || "unknown") + (image ? "<br>image " + image : "");
    });
    return out;
  }
  function values(line) {
    // y: integers times 10^e (render/history.py _scaled)
    var scale = Math.pow(10, Math.abs(line.e));
    return line.y.map(function (v) { return line.e < 0 ? v / scale : v * scale; });
  }
  function varints(bytes, count) {
    // render/packing.py varints: zigzag integers in 7-bit groups, the first group of every value, then the second
    // group of those that have one, ...; exact up to 2^53
    var planes = [], start = 0, size = count;
    while (size) {
      if (start + size > bytes.length) { throw new Error("the y values are cut short"); }
      var plane = bytes.subarray(start, start + size), next = 0;
      for (var i = 0; i < size; i++) { next += plane[i] >> 7; }
      planes.push(plane);
      start += size;
      size = next;
    }
    var at = planes.map(function () { return 0; }), out = new Array(count);
    for (var v = 0; v < count; v++) {
      var z = 0, k = 0, scale = 1, b;
      do {
        b = planes[k][at[k]++];
        z += (b & 127) * scale;
        scale *= 128;
        k += 1;
      } while (b & 128);
      out[v] = z % 2 === 0 ? z / 2 : -(z + 1) / 2;
    }
    return out;
  }
  function withValues(bytes) {
    // each line's y integers (render/history.py values_packed): its residuals, figures then lines in order, each
    // added to the rounded mean of the PREDICT integers before it
    var count = 0;
    data.figures.forEach(function (f) { f.lines.forEach(function (line) { count += line.x.length; }); });
    var all = varints(bytes, count), at = 0;
    data.figures.forEach(function (f) {
      f.lines.forEach(function (line) {
        var y = new Array(line.x.length);
        for (var i = 0; i < y.length; i++) {
          var n = Math.min(i, PREDICT), sum = 0;
          for (var j = i - n; j < i; j++) { sum += y[j]; }
          y[i] = all[at++] + (n ? Math.floor((sum + Math.floor(n / 2)) / n) : 0);
        }
        line.y = y;
      });
    });
  }
  function traces(f, shape) {
    var out = [], runs = hover(f);
    f.lines.forEach(function (line, i) {
      var name = text(line.shape);
      if (shape && name !== shape) { return; }
      out.push({type: "scatter", mode: line.x.length > 60 ? "lines" : "lines+markers", name: name,
                x: line.x, y: values(line),
                line: {color: COLORS[i % COLORS.length], width: 1.5,
                       dash: ["solid", "dot", "dash"][Math.floor(i / COLORS.length) % 3]},
                marker: {size: 5}, text: line.x.map(function (x) { return runs[x]; }),
                hovertemplate: "%{y}<br>%{text}<extra>" + name + "</extra>"});
    });
    // a mark: [shape, x, y, kind, text] (indices into data.text but x and y)
    Object.keys(MARKS).forEach(function (kind) {
      var marks = f.marks.filter(function (m) { return text(m[3]) === kind && (!shape || text(m[0]) === shape); });
      if (!marks.length) { return; }
      out.push({type: "scatter", mode: "markers", name: kind, x: marks.map(function (m) { return m[1]; }),
                y: marks.map(function (m) { return m[2]; }),
                marker: {symbol: MARKS[kind][0], size: 13, color: MARKS[kind][1], line: {width: 1.5, color: MARKS[kind][1]}},
                text: marks.map(function (m) { return text(m[0]) + ": " + text(m[4]) + "<br>" + runs[m[1]]; }),
                hovertemplate: "%{text}<extra></extra>"});
    });
    return out;
  }
  function draw(f, shape) {
    var div = document.createElement("div");
    div.className = "plot";
    div.id = f.id;
    holder.appendChild(div);
    var width = Math.max(holder.clientWidth - 2, 300);  // the box's borders
    var log = Boolean(f.ylog) && !shape;  // one shape alone: a linear axis shows its steps best
    var layout = {
      title: {text: f.title, font: {size: 14}, x: 0.01, xanchor: "left"}, width: width, height: 380,
      margin: {l: 70, r: 20, t: 50, b: 90}, hovermode: "closest", showlegend: true,
      legend: {orientation: "h", y: -0.32},
      xaxis: {title: {text: "runs in order (engine version where it changes)"}, tickvals: f.ticks[0], ticktext: f.ticks[1],
              tickangle: -30, zeroline: false, range: [-0.5, Math.max(f.n - 0.5, 0.5)]},
      yaxis: log ? {title: {text: f.metric + " (log scale)"}, type: "log", tickvals: f.ylog[0], ticktext: f.ylog[1]}
        : {title: {text: f.metric}}
    };
    return Plotly.newPlot(div, traces(f, shape), layout, config);
  }
  var generation = 0;  // a filter change stops the drawing of the figures it replaces
  function page() {
    var shape = filters().shape, mine = generation;
    var next = matching.slice(drawn, drawn + data.perPage);
    drawn += next.length;
    count.textContent = "figures " + Math.min(drawn, matching.length) + " of " + matching.length;
    more.style.display = drawn < matching.length ? "" : "none";
    // one figure a task: the first is on screen before the next ones are built; body[data-plots] is "ready"
    // once the page's figures are all drawn
    document.body.removeAttribute("data-plots");
    (function one(i) {
      if (mine !== generation) { return; }
      if (i >= next.length) { document.body.setAttribute("data-plots", "ready"); return; }
      draw(next[i], shape);
      setTimeout(function () { one(i + 1); }, 0);
    })(0);
  }
  function refresh() {
    var want = filters();
    generation += 1;
    holder.innerHTML = "";
    drawn = 0;
    matching = data.figures.filter(function (f) {
      return (!want.chip || f.chip === want.chip) && (!want.engine || f.engine === want.engine) &&
        (!want.metric || f.metric === want.metric) &&
        (!want.shape || f.lines.some(function (l) { return text(l.shape) === want.shape; }));
    });
    page();
  }
  // figures take their box's width: redrawn at the new width when the window is resized
  sskjOnResize(function () {
    var width = Math.max(holder.clientWidth - 2, 300);
    return Promise.all(Array.prototype.map.call(holder.querySelectorAll(".plot"), function (div) {
      return Plotly.relayout(div, {width: width});
    }));
  });
  function failed(message, state) {
    holder.innerHTML = '<p class="error">' + message + "</p>";
    document.body.setAttribute("data-plots", state);
  }
  // the data are unpacked while plotly.js is
  var unpacked = typeof DecompressionStream === "undefined" ? null
    : Promise.all([sskjUnpack(document.getElementById("sskj-history").textContent),
                   sskjUnpackBytes(document.getElementById("sskj-history-y").textContent)]);
  sskjLoadPlotly(function () {
    unpacked.then(function (both) {
      data = JSON.parse(both[0]);
      withValues(both[1]);
      selects.forEach(function (s) { s.addEventListener("change", refresh); });
      more.addEventListener("click", page);
      refresh();
    }).catch(function (err) { failed("The figures' data could not be read: " + err, "failed"); });
  }, failed);
})();
