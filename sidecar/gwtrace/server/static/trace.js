// Trace page: a waterfall of nested spans drawn to scale.
"use strict";

(() => {
  const { el, clear, api, showMessage, fmtDuration, fmtTime, statusOf, renderDetail, ticks } = gw;

  const traceId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");

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
    const stack = roots.slice().reverse().map((s) => ({ span: s, depth: 0 }));
    while (stack.length) {
      const { span, depth } = stack.pop();
      if (seen.has(span.spanID)) continue;
      seen.add(span.spanID);
      rows.push({ span, depth, size: 1, index: rows.length });
      const kids = children.get(span.spanID) || [];
      for (let i = kids.length - 1; i >= 0; i--) stack.push({ span: kids[i], depth: depth + 1 });
    }
    // Subtree sizes: in DFS order a row's descendants follow it contiguously.
    const open = [];
    for (const row of rows) {
      while (open.length && open[open.length - 1].depth >= row.depth) open.pop();
      for (const anc of open) anc.size++;
      open.push(row);
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

    for (const row of rows) {
      const s = row.span;
      const status = statusOf(s);
      const process = trace.processes[s.processID];
      const hasKids = (children.get(s.spanID) || []).length > 0;
      const toggle = el("button", { type: "button", className: "toggle", title: "collapse/expand", text: hasKids ? "▾" : "" });
      if (!hasKids) toggle.disabled = true;
      const label = el("div", { className: "wf-label", style: { paddingLeft: (4 + 14 * Math.min(row.depth, 40)) + "px" } },
        toggle,
        el("span", { className: "span-name", text: s.operationName }),
        el("span", { className: "span-service", text: process ? process.serviceName : "" }));
      const left = 100 * (s.startTime - start) / total;
      const width = Math.max(0.15, 100 * s.duration / total);
      const bar = el("div", { className: "bar status-" + status, style: { left: left + "%", width: width + "%" } });
      // Duration label after the bar, else before it, else inside it (long spans).
      let labelStyle;
      let labelClass = "bar-label";
      if (left + width < 85) labelStyle = { left: left + width + 0.5 + "%" };
      else if (left > 15) labelStyle = { right: 100 - left + 0.5 + "%" };
      else {
        labelStyle = { right: Math.max(0, 100 - left - width) + 0.5 + "%" };
        labelClass += " inside";
      }
      const dur = el("span", { className: labelClass, text: fmtDuration(s.duration), style: labelStyle });
      const node = el("div", { className: "wf-row", tabIndex: 0, dataset: { index: String(row.index), spanId: s.spanID, status } },
        label, el("div", { className: "wf-track" }, bar, dur));
      node.title = s.operationName + " — " + fmtDuration(s.duration);
      node.addEventListener("click", (ev) => {
        if (ev.target === toggle) return;
        select(row.index);
      });
      node.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter") select(row.index);
      });
      if (hasKids) {
        toggle.addEventListener("click", (ev) => {
          ev.stopPropagation();
          if (collapsed.has(row.index)) collapsed.delete(row.index);
          else collapsed.add(row.index);
          toggle.textContent = collapsed.has(row.index) ? "▸" : "▾";
          applyCollapse();
        });
      }
      rowNodes.push(node);
      fragment.append(node);
    }
    container.append(fragment);

    const wanted = decodeURIComponent(location.hash.slice(1));
    const initial = wanted ? rows.findIndex((r) => r.span.spanID === wanted) : -1;
    if (initial >= 0) {
      select(initial);
      rowNodes[initial].scrollIntoView({ block: "center" });
    }
  }

  async function main() {
    try {
      const body = await api("/api/traces/" + encodeURIComponent(traceId));
      render(body.data[0]);
    } catch (e) {
      showMessage(e.status === 404 ? "No trace " + traceId + " in this store." : "Cannot load the trace: " + e.message);
    } finally {
      document.body.dataset.ready = "1";
    }
  }

  document.addEventListener("DOMContentLoaded", main);
})();
