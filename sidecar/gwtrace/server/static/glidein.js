// Glidein page: one glidein's phases (validation scripts, HTCondor, user jobs) on a time line.
"use strict";

(() => {
  const { el, clear, api, showMessage, fmtDuration, fmtTime, statusOf, renderDetail, ticks, tagValue } = gw;

  const uuid = gw.subject(location.pathname.replace(/^\/glidein\//, ""), "glidein");
  const PHASE_LABELS = {
    glidein: "Glidein",
    validation: "Validation & setup scripts",
    condor: "HTCondor",
    job: "User jobs",
    other: "Other",
  };
  const ROW_HEIGHT = 24;

  /** Greedy interval packing: each span goes in the first sub-row free at its start. */
  function pack(spans) {
    const ends = [];
    const placed = [];
    for (const s of spans.slice().sort((a, b) => a.startTime - b.startTime || b.duration - a.duration)) {
      let row = ends.findIndex((end) => end <= s.startTime);
      if (row < 0) {
        row = ends.length;
        ends.push(0);
      }
      ends[row] = s.startTime + Math.max(s.duration, 1);
      placed.push({ span: s, row });
    }
    return { placed, rows: Math.max(1, ends.length) };
  }

  /** Links to the job page of every HTCondor job this glidein ran (the job wrapper's span names it). */
  function renderJobs(spans) {
    const jobs = new Map();
    for (const s of spans) {
      const id = tagValue(s.tags, "htcondor.job.global_id") || tagValue(s.tags, "htcondor.job.id");
      if (id !== undefined && !jobs.has(String(id))) jobs.set(String(id), s);
    }
    const box = clear(document.getElementById("glidein-jobs"));
    if (!jobs.size) return;
    box.append(el("strong", { text: "Jobs it ran: " }));
    for (const id of jobs.keys()) {
      box.append(el("a", { className: "job-link", href: "/job/" + encodeURIComponent(id), text: id }), " ");
    }
    box.hidden = false;
  }

  function render(data) {
    const spans = data.spans;
    const start = Math.min(...spans.map((s) => s.startTime));
    const end = Math.max(...spans.map((s) => s.startTime + s.duration));
    const total = Math.max(1, end - start);
    const site = tagValue(data.resource, "glidein.site");
    const entry = tagValue(data.resource, "glidein.entry");

    document.title = "gwtrace · glidein " + data.uuid;
    document.getElementById("glidein-title").textContent = "Glidein " + data.uuid;
    const meta = clear(document.getElementById("glidein-meta"));
    const add = (k, v) => meta.append(el("dt", { text: k }), el("dd", { text: v }));
    add("Site", site || "—");
    add("Entry", entry || "—");
    add("Service", data.service);
    add("Start", fmtTime(start));
    add("Lifetime", fmtDuration(total));
    add("Spans", String(spans.length));
    add("Errors", String(spans.filter((s) => statusOf(s) === "error").length));
    renderJobs(spans);
    const resource = clear(document.getElementById("glidein-resource"));
    resource.append(gw.kvTable(data.resource).firstChild);

    const legend = clear(document.getElementById("legend"));
    for (const [status, label] of [["ok", "ok"], ["unset", "unset"], ["error", "error"]]) {
      legend.append(el("span", { className: "legend-item" }, el("span", { className: "swatch status-" + status }), label));
    }

    const timeline = clear(document.getElementById("timeline"));
    const axis = el("div", { className: "tl-axis" });
    for (const t of ticks(total, 6)) {
      axis.append(el("span", { className: "tick", style: { left: (100 * t / total) + "%" }, text: "+" + fmtDuration(Math.round(t)) }));
    }
    timeline.append(el("div", { className: "tl-lane tl-axis-row" }, el("div", { className: "tl-lane-label" }), axis));

    const detail = document.getElementById("detail");
    let selected = null;
    for (const phase of data.phases) {
      const inPhase = spans.filter((s) => s.phase === phase);
      if (!inPhase.length) continue;
      const { placed, rows } = pack(inPhase);
      const area = el("div", { className: "tl-area", style: { height: rows * ROW_HEIGHT + "px" } });
      for (const { span, row } of placed) {
        const status = statusOf(span);
        const left = 100 * (span.startTime - start) / total;
        const width = Math.max(0.2, 100 * span.duration / total);
        const bar = el("div", {
          className: "tl-bar status-" + status,
          tabIndex: 0,
          title: span.operationName + " — " + fmtDuration(span.duration),
          dataset: { spanId: span.spanID, status, phase },
          style: { left: left + "%", width: width + "%", top: row * ROW_HEIGHT + 2 + "px" },
        }, el("span", { className: "tl-bar-text", text: span.operationName }));
        const choose = () => {
          if (selected) selected.classList.remove("selected");
          selected = bar;
          bar.classList.add("selected");
          renderDetail(detail, span, { serviceName: span.serviceName, tags: [] }, start);
        };
        bar.addEventListener("click", choose);
        bar.addEventListener("keydown", (ev) => {
          if (ev.key === "Enter") choose();
        });
        area.append(bar);
      }
      const label = el("div", { className: "tl-lane-label" },
        el("strong", { text: PHASE_LABELS[phase] || phase }),
        el("span", { className: "muted", text: " " + inPhase.length + (inPhase.length === 1 ? " span" : " spans") }));
      timeline.append(el("div", { className: "tl-lane", dataset: { phase } }, label, area));
    }
  }

  async function main() {
    try {
      const data = await api("/ui/api/glidein/" + encodeURIComponent(uuid));
      render(data);
      if (data.warnings && data.warnings.length) showMessage(data.warnings.join("; "), "info");
    } catch (e) {
      showMessage(e.status === 404 ? "No spans for glidein " + uuid + " in this store." : "Cannot load the glidein: " + e.message);
    } finally {
      gw.ready();
    }
  }

  if (uuid !== null) document.addEventListener("DOMContentLoaded", main);
})();
