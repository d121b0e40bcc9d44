// Job page: a user job's journey (submit, queue, holds, the glidein that ran it, its steps, exit) and why it waits.
"use strict";

(() => {
  const { el, clear, api, showMessage, fmtDuration, fmtTime } = gw;

  const jobId = gw.subject(location.pathname.replace(/^\/job\//, ""), "job");
  const SHOWN = ["hold.code", "hold.subcode", "hold.label", "hold.reason", "hold.meaning", "hold.suggestion", "htcondor.slot",
    "glidein.name", "glidein.site", "host.name", "htcondor.run.end_reason", "process.exit.code",
    "htcondor.exit_signal", "htcondor.aborted_reason", "htcondor.memory_usage_mb", "htcondor.disconnect_reason"];

  const us = (seconds) => Math.round(seconds * 1e6);

  function meta(data) {
    const job = data.job;
    const now = data.current;
    document.title = "gwtrace · job " + job.id;
    document.getElementById("job-title").textContent = "Job " + job.id + (job.schedd ? " @ " + job.schedd : "");
    const dl = clear(document.getElementById("job-meta"));
    const add = (k, v) => dl.append(el("dt", { text: k }), el("dd", null, v));
    let state = now.status;
    if (now.since !== null && now.since !== undefined) state += " since " + fmtTime(us(now.since));
    if (["idle", "held", "running"].includes(now.status) && now.for_s !== null) state += " (" + fmtDuration(us(now.for_s)) + ")";
    if (now.exit) state += " — " + Object.entries(now.exit).map(([k, v]) => "exit " + k + " " + v).join(", ");
    add("State", el("span", { id: "job-state", text: state }));
    if (now.hold_reason) add("Hold reason", el("span", { id: "job-hold-reason", text: now.hold_reason }));
    if (job.schedd_aliases && job.schedd_aliases.length) {
      add("Schedd also named", el("span", { id: "job-aliases", text: job.schedd_aliases.join(", ") }));
    }
    add("Owner", job.owner || "—");
    add("GlobalJobId", job.global_id || "—");
    add("Submitted", job.submitted ? fmtTime(us(job.submitted)) : "—");
    add("Runs", String(job.runs));
    add("Holds", String(job.holds));
    add("Trace", el("a", { id: "job-trace", href: "/trace/" + encodeURIComponent(job.trace_id), className: "mono", text: job.trace_id }));
    if (data.others && data.others.length) {
      const others = document.getElementById("job-others");
      others.textContent = "Also matching this id (older): " + data.others.join(", ");
      others.hidden = false;
    }
  }

  function renderWhy(why, status) {
    if (!why || !["idle", "held"].includes(status)) return;
    document.getElementById("why").hidden = false;
    const list = clear(document.getElementById("why-reasons"));
    for (const r of why.reasons) {
      const evidence = el("ul", { className: "why-evidence" });
      for (const line of r.evidence) evidence.append(el("li", { text: line }));
      list.append(el("li", { className: "why-reason", dataset: { weight: String(r.weight) } },
        el("strong", { className: "why-title", text: r.title }), evidence,
        r.advice ? el("p", { className: "why-advice", text: "What to do: " + r.advice }) : null));
    }
    if (!why.reasons.length) list.append(el("li", { className: "muted", text: "Nothing to say: see the missing evidence." }));
    if (why.missing.length) {
      document.getElementById("why-missing-box").hidden = false;
      const missing = clear(document.getElementById("why-missing"));
      for (const line of why.missing) missing.append(el("li", { text: line }));
    }
  }

  function details(node) {
    const bits = [];
    for (const key of SHOWN) {
      if (node.attributes[key] !== undefined) bits.push(key + "=" + node.attributes[key]);
    }
    return bits.join(", ");
  }

  // An open interval (no event ended it yet) is drawn and counted until now: "6h30m so far".
  function row(tbody, name, depth, start, end, origin, total, status, text, extra, soFar) {
    const left = 100 * (start - origin) / total;
    const width = Math.min(100 - left, Math.max(0.3, 100 * (end - start) / total));
    const bar = el("div", { className: "jr-bar status-" + status, style: { left: left + "%", width: width + "%" } });
    const tr = el("tr", extra || null,
      el("td", { className: "jr-name", style: { paddingLeft: (8 + depth * 18) + "px" }, text: name }),
      el("td", { className: "mono", text: "+" + fmtDuration(us(start - origin)) }),
      el("td", { className: "jr-duration", text: fmtDuration(us(end - start)) + (soFar ? " so far" : "") }),
      el("td", { className: "jr-bar-col" }, el("div", { className: "jr-track" }, bar)),
      el("td", { className: "jr-details" }, text));
    tbody.append(tr);
    return tr;
  }

  /** Under a failed step: where it failed and its stderr's last lines (common.js's failureOf). */
  function failureRow(tbody, node, depth) {
    const logs = (node.events || []).map((e) => ({
      timestamp: e.time,
      fields: [{ key: "event", value: e.name }].concat(Object.entries(e.attributes || {}).map(([key, value]) => ({ key, value }))),
    }));
    const box = gw.failureOf({ logs });
    if (!box) return;
    tbody.append(el("tr", { className: "jr-failure", dataset: { spanId: node.span_id } },
      el("td", { colSpan: 5, style: { paddingLeft: (26 + depth * 18) + "px" } }, box)));
  }

  function glideinRows(tbody, node, depth, origin, total) {
    const g = node.glidein;
    if (!g) return;
    const link = el("a", { className: "glidein-trace", href: "/trace/" + encodeURIComponent(g.trace_id), text: "glidein trace" });
    if (!g.known) {
      row(tbody, "glidein (no record in the store)", depth, node.start, node.start, origin, total, "unset", link, { className: "jr-glidein" });
      return;
    }
    const where = "at " + (g.site || "?") + (g.entry ? " (" + g.entry + ")" : "");
    if (g.submitted && g.started) {
      row(tbody, "glidein queued", depth, g.submitted, g.started, origin, total, "unset", where, { className: "jr-glidein" });
    }
    if (g.started && g.validated) {
      row(tbody, "glidein validated", depth, g.started, g.validated, origin, total, g.failed_script ? "error" : "ok",
        el("span", null, where + " ", link), { className: "jr-glidein", dataset: { step: "validated" } });
    }
  }

  function render(data) {
    meta(data);
    renderWhy(data.why, data.current.status);
    const tbody = clear(document.querySelector("#journey tbody"));
    const nodes = data.spans;
    if (!nodes.length) {
      tbody.append(el("tr", null, el("td", { colSpan: 5, className: "muted", text: "No spans of this job in the store." })));
      return;
    }
    const starts = nodes.map((n) => n.start).concat(nodes.filter((n) => n.glidein && n.glidein.submitted).map((n) => n.glidein.submitted));
    const origin = Math.min(...starts);
    const endOf = (n) => (n.open && n.elapsed_s !== undefined ? n.start + n.elapsed_s : n.end);
    const total = Math.max(1, Math.max(...nodes.map(endOf)) - origin);
    const children = new Map();
    const ids = new Set(nodes.map((n) => n.span_id));
    const roots = [];
    for (const n of nodes) {
      if (ids.has(n.parent)) {
        if (!children.has(n.parent)) children.set(n.parent, []);
        children.get(n.parent).push(n);
      } else roots.push(n);
    }
    const walk = (n, depth) => {
      if (n.name === "executing") glideinRows(tbody, n, depth, origin, total);
      const name = n.name + (n.open ? " (open)" : "");
      row(tbody, name, depth, n.start, endOf(n), origin, total, n.status, details(n),
        { className: "jr-span", dataset: { name: n.name, spanId: n.span_id, status: n.status } }, n.open);
      if (n.status === "error") failureRow(tbody, n, depth);
      for (const c of children.get(n.span_id) || []) walk(c, depth + 1);
    };
    for (const r of roots) walk(r, 0);
    resourceRows(data.resources, origin, total);
  }

  /** What the job (and its glidein's node) used, under the journey in its time line column (resources.js). */
  function resourceRows(resources, origin, total) {
    if (!resources || !resources.charts.length) return;
    const body = clear(document.getElementById("journey-resources"));
    gwResources.journeyRows(body, resources.charts, origin * 1e6, total * 1e6);
    body.hidden = !body.children.length;
  }

  async function main() {
    try {
      render(await api("/ui/api/job/" + encodeURIComponent(jobId)));
    } catch (e) {
      showMessage(e.status === 404 || e.status === 400 ? e.message : "Cannot load the job: " + e.message);
    } finally {
      gw.ready();
    }
  }

  if (jobId !== null) document.addEventListener("DOMContentLoaded", main);
})();
