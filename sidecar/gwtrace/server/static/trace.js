// Trace page: a waterfall of nested spans drawn to scale.
"use strict";

(() => {
  const { el, clear, api, showMessage, fmtDuration, fmtTime, statusOf, renderDetail, ticks } = gw;

  const traceId = gw.subject(location.pathname.split("/").filter(Boolean).pop() || "", "trace");

  /** Spans in display order (depth first, children by start time), with depth and subtree size. */
  function layout(trace) {
    const byId = new Map();
    for (const s of trace.spans) byId.set(s.spanID, s);
    const children = new Map();
    const roots = [];
    for (const s of trace.spans) {
      const ref = (s.references || []).find((r) => r.refType === "CHILD_OF" && byId.has(r.spanID) && r.spanID !== s.spanID);
      if (ref) {
        if (!children.has(ref.spanID)) children.set(ref.spanID, []);
        children.get(ref.spanID).push(s);
      } else {
        roots.push(s);
      }
    }
    const byStart = (a, b) => a.startTime - b.startTime || b.duration - a.duration;
    roots.sort(byStart);
    for (const list of children.values()) list.sort(byStart);
    const rows = [];
    const seen = new Set();
    // Iterative DFS: a 5,000-span chain must not overflow the JS stack.
    const stack = roots.slice().reverse().map((s) => ({ span: s, depth: 0, parent: -1 }));
    while (stack.length) {
      const { span, depth, parent } = stack.pop();
      if (seen.has(span.spanID)) continue;
      seen.add(span.spanID);
      const index = rows.length;
      rows.push({ span, depth, parent, size: 1, index });
      const kids = children.get(span.spanID) || [];
      for (let i = kids.length - 1; i >= 0; i--) stack.push({ span: kids[i], depth: depth + 1, parent: index });
    }
    // Subtree sizes (descendants follow a row contiguously in DFS order).
    for (let i = rows.length - 1; i > 0; i--) {
      if (rows[i].parent >= 0) rows[rows[i].parent].size += rows[i].size;
    }
    return { rows, children };
  }

  function render(trace) {
    const start = Math.min(...trace.spans.map((s) => s.startTime));
    const end = Math.max(...trace.spans.map((s) => s.startTime + s.duration));
    const total = Math.max(1, end - start);
    const { rows, children } = layout(trace);
    const root = rows[0].span;
    const errors = trace.spans.filter((s) => statusOf(s) === "error").length;
    const services = [...new Set(Object.values(trace.processes).map((p) => p.serviceName))].sort();

    document.title = "gwtrace · " + root.operationName;
    document.getElementById("trace-title").textContent = root.operationName;
    const meta = clear(document.getElementById("trace-meta"));
    const add = (k, v) => meta.append(el("dt", { text: k }), el("dd", { text: v }));
    add("Trace ID", trace.traceID);
    add("Start", fmtTime(start));
    add("Duration", fmtDuration(total));
    add("Spans", String(trace.spans.length));
    add("Errors", String(errors));
    add("Services", services.join(", "));
    const glidein = Object.values(trace.processes).map((p) => gw.tagValue(p.tags, "glidein.uuid") || gw.tagValue(p.tags, "service.instance.id")).find(Boolean);
    if (glidein) {
      meta.append(el("dt", { text: "Glidein" }), el("dd", null, el("a", { href: "/glidein/" + encodeURIComponent(glidein), text: String(glidein) })));
    }
    document.getElementById("raw-jaeger").href = "/api/traces/" + encodeURIComponent(trace.traceID);
    document.getElementById("raw-otlp").href = "/api/v3/traces/" + encodeURIComponent(trace.traceID);

    const axis = clear(document.getElementById("wf-axis"));
    for (const t of ticks(total, 5)) {
      axis.append(el("span", { className: "tick", style: { left: (100 * t / total) + "%" }, text: fmtDuration(Math.round(t)) }));
    }

    const container = clear(document.getElementById("wf-rows"));
    const fragment = document.createDocumentFragment();
    const rowNodes = [];
    const detail = document.getElementById("detail");
    let selected = null;

    function select(i) {
      if (selected !== null) rowNodes[selected].classList.remove("selected");
      selected = i;
      rowNodes[i].classList.add("selected");
      const span = rows[i].span;
      renderDetail(detail, span, trace.processes[span.processID], start);
      showPercentile(span.spanID);
    }

    const collapsed = new Set();
    function applyCollapse() {
      let i = 0;
      while (i < rows.length) {
        rowNodes[i].hidden = false;
        if (collapsed.has(i)) {
          for (let j = i + 1; j < i + rows[i].size; j++) rowNodes[j].hidden = true;
          i += rows[i].size;
        } else {
          i++;
        }
      }
    }

    // Rows are built with plain DOM calls (5,000 spans is 35,000 nodes) and
    // one delegated listener; names only ever go in through textContent.
    for (const row of rows) {
      const s = row.span;
      const status = statusOf(s);
      const process = trace.processes[s.processID];
      const hasKids = (children.get(s.spanID) || []).length > 0;
      const node = document.createElement("div");
      node.className = "wf-row";
      node.tabIndex = 0;
      node.dataset.index = String(row.index);
      node.dataset.spanId = s.spanID;
      node.dataset.status = status;
      node.title = s.operationName + " — " + fmtDuration(s.duration);

      const label = document.createElement("div");
      label.className = "wf-label";
      label.style.paddingLeft = (4 + 14 * Math.min(row.depth, 40)) + "px";
      const toggle = document.createElement("button");
      toggle.type = "button";
      toggle.className = "toggle";
      if (hasKids) {
        toggle.textContent = "▾";
        toggle.title = "collapse/expand";
      } else {
        toggle.disabled = true;
      }
      const name = document.createElement("span");
      name.className = "span-name";
      name.textContent = s.operationName;
      const svc = document.createElement("span");
      svc.className = "span-service";
      svc.textContent = process ? process.serviceName : "";
      label.append(toggle, name, svc);

      const left = 100 * (s.startTime - start) / total;
      const width = Math.max(0.15, 100 * s.duration / total);
      const track = document.createElement("div");
      track.className = "wf-track";
      const bar = document.createElement("div");
      bar.className = "bar status-" + status;
      bar.style.left = left + "%";
      bar.style.width = width + "%";
      // Duration label after the bar, else before it, else inside it (long spans).
      const dur = document.createElement("span");
      dur.className = "bar-label";
      dur.textContent = fmtDuration(s.duration);
      if (left + width < 85) dur.style.left = left + width + 0.5 + "%";
      else if (left > 15) dur.style.right = 100 - left + 0.5 + "%";
      else {
        dur.style.right = Math.max(0, 100 - left - width) + 0.5 + "%";
        dur.className += " inside";
      }
      track.append(bar, dur);
      node.append(label, track);
      rowNodes.push(node);
      fragment.append(node);
    }

    container.addEventListener("click", (ev) => {
      const node = ev.target.closest(".wf-row");
      if (!node) return;
      const index = Number(node.dataset.index);
      if (ev.target.classList.contains("toggle")) {
        if (ev.target.disabled) return;
        if (collapsed.has(index)) collapsed.delete(index);
        else collapsed.add(index);
        ev.target.textContent = collapsed.has(index) ? "▸" : "▾";
        applyCollapse();
        return;
      }
      select(index);
    });
    container.addEventListener("keydown", (ev) => {
      const node = ev.target.closest(".wf-row");
      if (node && ev.key === "Enter") select(Number(node.dataset.index));
    });
    container.append(fragment);

    const wanted = gw.hashPart();
    const initial = wanted ? rows.findIndex((r) => r.span.spanID === wanted) : -1;
    if (initial >= 0) {
      select(initial);
      rowNodes[initial].scrollIntoView({ block: "center" });
    }
    const glideins = [...new Set(Object.values(trace.processes).map((p) => gw.tagValue(p.tags, "glidein.uuid")).filter(Boolean))];
    return { start, total, glideins };
  }

  /** What the trace's jobs and glideins used, under the waterfall on its time axis (resources.js). */
  async function resources(axis) {
    const query = axis.glideins.slice(0, 5).map((g) => "glidein=" + encodeURIComponent(g)).join("&");
    const data = await api("/ui/api/resources/" + encodeURIComponent(traceId) + (query ? "?" + query : ""));
    if (!data.subjects.length) return;
    const box = clear(document.getElementById("resources"));
    gwResources.waterfallRows(box, data.subjects, axis.start, axis.total);
    box.hidden = !box.children.length;
  }

  // Each span against the same phase at the same entry (/ui/api/percentiles), once loaded.
  let percentiles = {};

  /** One line on a span's percentile, or why there is none. */
  function percentileText(p) {
    const at = "at " + (percentiles.entry || "its entry");
    if (p.percentile === null) return "Percentile: none — " + p.reason;
    return "Percentile " + Math.round(p.percentile) + " of " + p.phase + " " + at + " (n=" + p.n +
      ", median " + fmtDuration(Math.round(p.median_s * 1e6)) + ")";
  }

  /** Add each span's percentile to its row's tooltip (and, once selected, its detail). */
  async function percentilesOf() {
    percentiles = await api("/ui/api/percentiles/" + encodeURIComponent(traceId));
    for (const node of document.querySelectorAll("#wf-rows .wf-row")) {
      const p = percentiles.spans[node.dataset.spanId];
      if (!p) continue;
      node.title += " — " + percentileText(p);
      if (p.percentile !== null) node.dataset.percentile = String(p.percentile);
    }
    const selected = document.querySelector("#wf-rows .wf-row.selected");
    if (selected) showPercentile(selected.dataset.spanId);
  }

  /** The selected span's percentile in the detail panel, under its duration. */
  function showPercentile(spanId) {
    const meta = document.querySelector("#detail .meta");
    if (!meta || !percentiles.spans) return;
    const p = percentiles.spans[spanId];
    const text = p ? percentileText(p) : "Percentile: none — " + (percentiles.reason || "span not compared");
    const old = document.querySelector("#detail .percentile");
    if (old) old.remove();
    meta.after(el("p", { className: "percentile", text }));
  }

  /** Mark the spans on the critical path and show each span's self-time (computed by the server). */
  async function critical() {
    const data = await api("/ui/api/critical/" + encodeURIComponent(traceId));
    const onPath = new Set(data.onPath);
    for (const node of document.querySelectorAll("#wf-rows .wf-row")) {
      const id = node.dataset.spanId;
      if (onPath.has(id)) node.classList.add("critical");
      const self = data.selfTime[id];
      if (self !== undefined) node.title += " — self " + fmtDuration(self);
      if (data.share[id]) node.title += " — on the critical path " + fmtDuration(data.share[id]);
    }
    const total = data.byOperation.reduce((acc, row) => acc + row[1], 0) || 1;
    const body = clear(document.querySelector("#self-times tbody"));
    for (const [name, value, count] of data.byOperation) {
      body.append(el("tr", null, el("td", { text: name }), el("td", { className: "num", text: fmtDuration(value) }),
        el("td", { className: "num", text: (100 * value / total).toFixed(1) + "%" }),
        el("td", { className: "num", text: String(count) })));
    }
    const toggle = document.getElementById("show-critical");
    const apply = () => document.getElementById("waterfall").classList.toggle("show-critical", toggle.checked);
    toggle.addEventListener("change", apply);
    toggle.checked = location.search.includes("critical=1");
    apply();
  }

  async function main() {
    try {
      const body = await api("/api/traces/" + encodeURIComponent(traceId));
      const axis = render(body.data[0]);
      if (body.data[0].warnings && body.data[0].warnings.length) showMessage(body.data[0].warnings.join("; "), "info");
      try {
        await critical();
      } catch (e) {
        showMessage("No critical path: " + e.message, "info");
      }
      try {
        await percentilesOf();
      } catch (e) {
        showMessage("No percentiles: " + e.message, "info");
      }
      try {
        await resources(axis);
      } catch (e) {
        showMessage("No resources: " + e.message, "info");
      }
    } catch (e) {
      showMessage(e.status === 404 ? "No trace " + traceId + " in this store." : "Cannot load the trace: " + e.message);
    } finally {
      gw.ready();
    }
  }

  if (traceId !== null) document.addEventListener("DOMContentLoaded", main);
})();
