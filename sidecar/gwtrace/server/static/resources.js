// What a job or glidein used, drawn under the trace's waterfall and the job's journey on the same time axis.
//
// Why drawn here and not by matplotlib on the server: the waterfall is laid out by the browser (a label column,
// then a track whose width is whatever the window gives), and every bar sits at 100 * (t - start) / total percent
// of that track. A chart drawn in the same kind of track with the same start and total lines up with the bars
// exactly, at any width; a server-side picture would have its own margins and axis and could only be close.
// Each chart is an inline SVG whose viewBox is [0, 1000] wide, stretched to the track (preserveAspectRatio none,
// strokes that do not scale), so x = 1000 * (t - start) / total. Numbers go in the label, as text.
"use strict";

const gwResources = (() => {
  const { el } = gw;
  const SVG = new DOMParser().parseFromString("<svg></svg>", "text/html").querySelector("svg").namespaceURI;
  const WIDTH = 1000;
  const HEIGHT = 60;

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    return node;
  }

  const fmt = (v, digits) => (v === null || v === undefined ? "?" : Number(v).toLocaleString("en-US", { maximumFractionDigits: digits }));

  /**
   * One chart: lines (each {points: [[t_us, v]], colour, name}) and dashed limits ({value, colour, name}),
   * x from start_us over total_us, y from 0 to the largest value or limit (+10 %).
   */
  function plot(lines, limits, startUs, totalUs) {
    const values = lines.flatMap((l) => l.points.map((p) => p[1])).concat(limits.map((l) => l.value));
    const top = Math.max(1e-9, ...values) * 1.1;
    const x = (t) => (WIDTH * (t - startUs) / totalUs).toFixed(2);
    const y = (v) => (HEIGHT - HEIGHT * v / top).toFixed(2);
    const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: "none", class: "res-svg",
      role: "img" });
    root.append(svg("rect", { x: 0, y: 0, width: WIDTH, height: HEIGHT, fill: "#f7f9fc" }));
    for (const limit of limits) {
      const line = svg("line", { x1: 0, x2: WIDTH, y1: y(limit.value), y2: y(limit.value), stroke: limit.colour,
        "stroke-width": 1.5, "stroke-dasharray": "6 4", "vector-effect": "non-scaling-stroke", class: "res-limit" });
      line.append(svg("title"));
      line.firstChild.textContent = limit.name;
      root.append(line);
    }
    for (const line of lines) {
      if (!line.points.length) continue;
      const poly = svg("polyline", { points: line.points.map((p) => x(p[0]) + "," + y(p[1])).join(" "), fill: "none",
        stroke: line.colour, "stroke-width": 1.5, "vector-effect": "non-scaling-stroke", class: "res-line",
        "data-series": line.name });
      root.append(poly);
    }
    return root;
  }

  function who(s) {
    return s.kind === "job" ? "job " + (s.job_id || "?") : "glidein " + (s.glidein || "?");
  }

  /**
   * The charts of one subject as [{name, text, svg}]: CPU cores used (against request_cpus), memory (RSS and peak
   * against request_memory), the node's load average (against the machine's cores).
   */
  function charts(s, startUs, totalUs) {
    const out = [];
    if (s.cores.length) {
      const most = Math.max(...s.cores.map((p) => p[1]));
      const limits = s.request_cpus ? [{ value: s.request_cpus, colour: "#c62828", name: "request_cpus " + s.request_cpus }] : [];
      out.push({ name: "cores", label: "CPU cores · " + who(s),
        text: "up to " + fmt(most, 1) + (s.request_cpus ? " of " + fmt(s.request_cpus, 1) + " requested" : ""),
        svg: plot([{ points: s.cores, colour: "#1565c0", name: "cores" }], limits, startUs, totalUs) });
    }
    if (s.rss_mb.length || s.peak_mb.length) {
      const peak = Math.max(...s.rss_mb.concat(s.peak_mb).map((p) => p[1]));
      const limits = s.request_memory_mb ? [{ value: s.request_memory_mb, colour: "#c62828", name: "request_memory " + s.request_memory_mb + " MB" }] : [];
      out.push({ name: "memory", label: "Memory · " + who(s),
        text: "peak " + fmt(peak, 0) + " MB" + (s.request_memory_mb ? " of " + fmt(s.request_memory_mb, 0) + " MB requested" : ""),
        svg: plot([{ points: s.rss_mb, colour: "#2e7d32", name: "rss" }, { points: s.peak_mb, colour: "#ef6c00", name: "peak" }],
          limits, startUs, totalUs) });
    }
    if (s.load.length) {
      const most = Math.max(...s.load.map((p) => p[1]));
      const limits = s.machine_cores ? [{ value: s.machine_cores, colour: "#c62828", name: s.machine_cores + " cores" }] : [];
      out.push({ name: "load", label: "Node load · " + who(s),
        text: "up to " + fmt(most, 1) + (s.machine_cores ? " on " + fmt(s.machine_cores, 0) + " cores" : ""),
        svg: plot([{ points: s.load, colour: "#6a1b9a", name: "load" }], limits, startUs, totalUs) });
    }
    return out;
  }

  /** Rows for the trace page: a label as wide as the waterfall's, the chart in a track as wide as its bars'. */
  function waterfallRows(container, subjects, startUs, totalUs) {
    for (const s of subjects) {
      for (const c of charts(s, startUs, totalUs)) {
        const label = el("div", { className: "wf-label res-label", title: c.label + " — " + c.text },
          el("span", { className: "res-name", text: c.label }), el("span", { className: "res-text muted", text: c.text }));
        container.append(el("div", { className: "res-row", dataset: { chart: c.name, subject: s.kind } }, label,
          el("div", { className: "wf-track res-track" }, c.svg)));
      }
    }
  }

  /** Rows for the job page's journey table: the chart in the time line column, the figures beside it. */
  function journeyRows(tbody, subjects, startUs, totalUs) {
    for (const s of subjects) {
      for (const c of charts(s, startUs, totalUs)) {
        tbody.append(el("tr", { className: "res-row", dataset: { chart: c.name, subject: s.kind } },
          el("td", { className: "res-label", colSpan: 3, text: c.label }),
          el("td", { className: "jr-bar-col" }, el("div", { className: "res-track" }, c.svg)),
          el("td", { className: "jr-details res-text", text: c.text })));
      }
    }
  }

  return { charts, waterfallRows, journeyRows };
})();
