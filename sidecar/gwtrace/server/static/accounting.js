// Accounting page: pilot time per category over time (the server's matplotlib chart), per group with a totals
// row, gwtrace's own figures (core-weighted on both sides), and beside them GlideinWMS's analyze_entries
// figures, labelled, with the note on its >= 3.10.12 behaviour. Every count links to the glideins behind it.
"use strict";

(() => {
  const { el, clear, api, picture, showMessage, ready } = gw;
  const CATEGORIES = ["validation_fail", "decision_problem", "misconfig_badput", "goodput", "preemption_badput",
    "overhead"];
  const TOTALS = [["glideins", "glideins"], ["time_h", "time h"], ["time_used_h", "used h"],
    ["time_validating_h", "validating h"], ["time_idle_h", "idle h"], ["time_wasted_h", "wasted h"],
    ["badput_h", "badput h"], ["time_efficiency", "time eff."], ["goodput_fraction", "goodput frac."]];
  const FIGURES = [["pilot_hours", "pilot h"], ["job_hours", "jobs h"], ["goodput_hours", "goodput h"],
    ["badput_hours", "badput h"], ["validation_fail_hours", "validation fail h"], ["idle_hours", "idle h"],
    ["efficiency", "efficiency"], ["goodput_fraction", "goodput frac."]];
  const TOTAL = "total";

  function params() {
    const form = new URLSearchParams(location.search);
    if (!form.has("by")) form.set("by", "site");
    for (const [key, value] of [...form.entries()]) if (!value) form.delete(key);
    return form;
  }

  function fillForm(q) {
    for (const key of ["since", "until", "bucket", "by"]) {
      const input = document.getElementById("a-" + key);
      if (q.has(key)) input.value = q.get(key);
    }
  }

  /** The glideins page for one group (and category), over the same period. */
  function glideinsLink(q, by, group, category) {
    const link = new URLSearchParams();
    for (const key of ["since", "until", "site", "entry", "frontend"]) if (q.get(key)) link.set(key, q.get(key));
    if (by && group !== "unknown" && group !== "all" && group !== TOTAL) link.set(by, group);
    if (category) link.set("category", category);
    return "/glideins?" + link.toString();
  }

  function number(value, href) {
    if (value === null || value === undefined) return el("td", { className: "num", text: "-" });
    const text = typeof value === "number" ? value.toFixed(value % 1 ? 2 : 0) : String(value);
    return el("td", { className: "num" }, href ? el("a", { href, text }) : text);
  }

  function renderGroups(q, data) {
    const table = document.getElementById("acct-groups");
    document.getElementById("acct-groups-title").textContent = data.by ? "By " + data.by : "Whole period";
    clear(table.tHead).append(el("tr", null, el("th", { text: data.by || "" }),
      ...CATEGORIES.concat(["total"]).map((c) => el("th", { className: "num", text: c.replace(/_/g, " ") }))));
    const body = clear(table.tBodies[0]);
    for (const row of data.groups) {
      body.append(el("tr", { dataset: { group: row.group }, className: row.group === TOTAL ? "total" : "" },
        el("td", { text: row.group }),
        ...CATEGORIES.map((c) => number(row[c], glideinsLink(q, data.by, row.group, c))),
        number(row.total, glideinsLink(q, data.by, row.group, null))));
    }
    if (!data.groups.some((row) => row.total > 0)) {
      body.append(el("tr", null, el("td", { colSpan: 8, text: "no glidein time in this period" })));
    }
  }

  function renderFigures(q, data) {
    const table = document.getElementById("acct-figures");
    clear(table.tHead).append(el("tr", null, el("th", { text: data.by || "" }),
      ...FIGURES.map(([, label]) => el("th", { className: "num", text: label }))));
    const body = clear(table.tBodies[0]);
    for (const [group, f] of Object.entries(data.figures)) {
      body.append(el("tr", { className: group === TOTAL ? "total" : "" }, el("td", { text: group }),
        ...FIGURES.map(([key]) => number(f[key]))));
    }
  }

  function renderTotals(q, data) {
    const table = document.getElementById("acct-totals");
    clear(table.tHead).append(el("tr", null, el("th", { text: data.by || "" }),
      ...TOTALS.map(([, label]) => el("th", { className: "num", text: label }))));
    const body = clear(table.tBodies[0]);
    for (const [group, t] of Object.entries(data.glideinwms.groups)) {
      body.append(el("tr", { className: group === TOTAL ? "total" : "" }, el("td", { text: group }),
        ...TOTALS.map(([key]) => number(t[key], key === "glideins" ? glideinsLink(q, data.by, group, null) : null))));
    }
    const note = document.getElementById("acct-gwms-note");
    note.textContent = data.glideinwms.note || "";
    note.hidden = !data.glideinwms.note;
  }

  async function load() {
    const q = params();
    fillForm(q);
    try {
      const data = await api("/ui/api/accounting?" + q.toString());
      renderGroups(q, data);
      renderFigures(q, data);
      renderTotals(q, data);
      document.getElementById("acct-demand").textContent =
        Object.entries(data.demand).map(([k, v]) => k.replace(/_/g, " ") + ": " + v).join("; ");
      try {
        const chart = document.getElementById("acct-chart");
        chart.src = await picture("/ui/api/accounting.svg?" + q.toString());
        chart.hidden = false;
      } catch (e) {
        showMessage("no chart: " + e.message, "info");
      }
    } catch (e) {
      showMessage(e.message);
    }
    ready();
  }

  document.getElementById("acct-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const form = new URLSearchParams(new FormData(ev.target));
    location.search = form.toString();
  });
  load();
})();
