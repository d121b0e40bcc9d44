// Search page: find traces by service, site, entry, status, duration and time.
"use strict";

(() => {
  const { el, clear, api, showMessage, fmtDuration, fmtTime } = gw;
  const form = () => document.getElementById("search");

  function fillSelect(select, values, current) {
    for (const v of values) {
      const option = new Option(v, v); // text and value, never parsed as HTML
      select.append(option);
    }
    if (current) {
      if (![...select.options].some((o) => o.value === current)) select.append(new Option(current, current));
      select.value = current;
    }
  }

  function toMicros(localValue) {
    if (!localValue) return "";
    const ms = new Date(localValue).getTime();
    return Number.isNaN(ms) ? "" : String(ms * 1000);
  }

  function updateCustomRange() {
    const custom = document.getElementById("f-lookback").value === "custom";
    for (const node of document.querySelectorAll(".custom-range")) node.hidden = !custom;
  }

  function queryFromForm() {
    const data = new FormData(form());
    const q = new URLSearchParams();
    for (const key of ["service", "site", "entry", "status", "minDuration", "limit"]) {
      const v = (data.get(key) || "").trim();
      if (v) q.set(key, v);
    }
    const lookback = data.get("lookback");
    if (lookback === "custom") {
      const from = toMicros(data.get("from"));
      const to = toMicros(data.get("to"));
      if (from) q.set("start", from);
      if (to) q.set("end", to);
      q.set("lookback", "custom");
      if (data.get("from")) q.set("from", data.get("from"));
      if (data.get("to")) q.set("to", data.get("to"));
    } else if (lookback) {
      q.set("lookback", lookback);
    }
    return q;
  }

  async function runSearch() {
    const q = queryFromForm();
    history.replaceState(null, "", q.toString() ? "?" + q.toString() : location.pathname);
    const apiQuery = new URLSearchParams(q);
    if (apiQuery.get("lookback") === "custom") apiQuery.delete("lookback");
    apiQuery.delete("from");
    apiQuery.delete("to");
    const tbody = clear(document.querySelector("#results tbody"));
    try {
      const body = await api("/ui/api/search?" + apiQuery.toString());
      showMessage("");
      renderResults(tbody, body.traces);
    } catch (e) {
      showMessage("Search failed: " + e.message);
    } finally {
      gw.ready();
    }
  }

  function renderResults(tbody, traces) {
    document.getElementById("result-count").textContent = "(" + traces.length + ")";
    if (!traces.length) {
      tbody.append(el("tr", null, el("td", { colSpan: 8, className: "muted", text: "No traces match." })));
      return;
    }
    const longest = Math.max(1, ...traces.map((t) => t.duration));
    for (const t of traces) {
      const link = el("a", { href: "/trace/" + encodeURIComponent(t.traceID), className: "trace-link", text: t.rootName });
      const idNote = el("div", { className: "muted mono", text: t.traceID });
      const glidein = t.glidein
        ? el("div", null, el("a", { className: "glidein-link", href: "/glidein/" + encodeURIComponent(t.glidein), text: "glidein " + t.glidein }))
        : null;
      // a glidein's trace: drawn by the glidein's own outcome; errors of its user jobs are told apart
      const jobsOnly = t.glideinStatus === "ok" && t.status === "error";
      const drawn = t.glideinStatus === "error" ? "error" : jobsOnly ? "jobs-failed" : t.glideinStatus === "ok" ? "ok" : t.status;
      const outcome = t.glideinStatus === "error" ? el("div", { className: "error-text", text: "glidein failed" + (t.failedScript ? ": " + t.failedScript : "") })
        : jobsOnly ? el("div", { className: "amber-text", text: "glidein OK; its user jobs had " + t.errorCount + " error span(s)" }) : null;
      const bar = el("div", { className: "dur-bar status-" + drawn, style: { width: Math.max(1, 100 * t.duration / longest) + "%" } });
      tbody.append(el("tr", { className: "status-row-" + drawn, dataset: { trace: t.traceID, glideinStatus: t.glideinStatus || "" } },
        el("td", { className: "nowrap", text: fmtTime(t.startTime) }),
        el("td", null, link, idNote, glidein, outcome),
        el("td", { text: t.services.join(", ") }),
        el("td", { text: t.site || "" }),
        el("td", { text: t.entry || "" }),
        el("td", { className: "num", text: String(t.spanCount) }),
        el("td", { className: "num" + (t.errorCount ? (jobsOnly ? " amber-text" : " error-text") : ""), text: String(t.errorCount) }),
        el("td", { className: "dur-cell" }, el("div", { className: "dur-track" }, bar), el("span", { text: fmtDuration(t.duration) }))));
    }
  }

  async function loadGlideins() {
    const tbody = clear(document.querySelector("#glideins tbody"));
    try {
      const body = await api("/ui/api/glideins?limit=20");
      if (!body.glideins.length) {
        tbody.append(el("tr", null, el("td", { colSpan: 5, className: "muted", text: "No glidein resources (glidein.uuid) stored yet." })));
      }
      for (const g of body.glideins) {
        tbody.append(el("tr", null,
          el("td", null, el("a", { href: "/glidein/" + encodeURIComponent(g.uuid), className: "mono", text: g.uuid })),
          el("td", { text: g.site || "" }),
          el("td", { text: g.entry || "" }),
          el("td", { className: "nowrap", text: fmtTime(g.startTime) }),
          el("td", { text: fmtDuration(g.duration) })));
      }
    } catch (e) {
      if (e.status !== 401) showMessage("Cannot list glideins: " + e.message);
    }
  }

  async function main() {
    const params = new URLSearchParams(location.search);
    for (const [key, id] of [["status", "f-status"], ["minDuration", "f-min"], ["limit", "f-limit"], ["lookback", "f-lookback"], ["from", "f-from"], ["to", "f-to"]]) {
      if (params.get(key)) document.getElementById(id).value = params.get(key);
    }
    updateCustomRange();
    document.getElementById("f-lookback").addEventListener("change", updateCustomRange);
    form().addEventListener("submit", (ev) => {
      ev.preventDefault();
      runSearch();
    });
    document.getElementById("job-find").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const id = document.getElementById("f-job").value.trim();
      if (id) location.href = "/job/" + encodeURIComponent(id);
    });
    try {
      const filters = await api("/ui/api/filters");
      fillSelect(document.getElementById("f-service"), filters.services, params.get("service"));
      fillSelect(document.getElementById("f-site"), filters.sites, params.get("site"));
      fillSelect(document.getElementById("f-entry"), filters.entries, params.get("entry"));
    } catch (e) {
      if (e.status !== 401) showMessage("Cannot load the search filters: " + e.message);
      gw.ready();
      return;
    }
    loadGlideins();
    runSearch();
  }

  document.addEventListener("DOMContentLoaded", main);
})();
