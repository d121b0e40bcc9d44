// Analysis page: where glidein time goes per entry or site (the server's matplotlib charts, shown inline so
// that each bar, bin and point links to the glideins behind it), the phase table and the failing scripts.
"use strict";

(() => {
  const { el, clear, api, svgChart, pageQuery, showMessage, ready } = gw;
  const FIELDS = ["since", "until", "site", "entry", "frontend", "by"];

  function minutes(seconds) {
    return seconds === null || seconds === undefined ? "-" : (seconds / 60).toFixed(1);
  }

  function glideinsLink(q, extra) {
    const link = new URLSearchParams();
    for (const key of ["since", "until", "site", "entry", "frontend"]) if (q.get(key)) link.set(key, q.get(key));
    for (const [key, value] of Object.entries(extra)) link.set(key, value);
    return "/glideins?" + link.toString();
  }

  function renderPhases(q, by, rows) {
    const table = document.getElementById("an-phases");
    document.getElementById("an-phases-title").textContent = "Phases per " + by + " (minutes per glidein)";
    clear(table.tHead).append(el("tr", null, ...[by, "phase", "glideins", "failed", "p50", "p90", "p99", "canonical h"]
      .map((h, i) => el("th", { className: i > 1 ? "num" : "", text: h }))));
    const body = clear(table.tBodies[0]);
    for (const r of rows) {
      const href = r[by] === "unknown" ? null : glideinsLink(q, { [by]: r[by], phase: r.phase });
      body.append(el("tr", { dataset: { group: r[by], phase: r.phase } }, el("td", { text: r[by] }),
        el("td", { text: r.phase }),
        el("td", { className: "num" }, href ? el("a", { href, text: String(r.glideins) }) : String(r.glideins)),
        el("td", { className: "num", text: String(r.failed) }),
        el("td", { className: "num", text: minutes(r.p50_s) }), el("td", { className: "num", text: minutes(r.p90_s) }),
        el("td", { className: "num", text: minutes(r.p99_s) }),
        el("td", { className: "num", text: r.canonical_hours === null ? "-" : String(r.canonical_hours) })));
    }
  }

  function renderScripts(q, data) {
    const body = clear(document.querySelector("#an-scripts tbody"));
    const failing = data.scripts.filter((r) => r.failed);
    for (const r of failing) {
      const top = r.messages[0] || { message: "", count: 0 };
      body.append(el("tr", null, el("td", { text: r.script }), el("td", { text: r.site }),
        el("td", { className: "num", text: String(r.runs) }),
        el("td", { className: "num" }, el("a", { href: glideinsLink(q, { site: r.site, script_failed: r.script }), text: String(r.failed) })),
        el("td", { className: "num", text: Math.round(100 * r.failure_rate) + "%" }),
        el("td", { text: top.message + " (" + top.count + ")" })));
    }
    if (!failing.length) body.append(el("tr", null, el("td", { colSpan: 6, text: "no script failed" })));
    const worse = data.trends.filter((t) => t.worse);
    document.getElementById("an-worse").textContent = "Getting worse: " +
      (worse.length ? worse.map((t) => t.site + ": " + t.worse).join("; ") : "no site");
  }

  async function drawChart(box, q) {
    try {
      const svg = await svgChart("/ui/api/analysis/" + box.dataset.chart + ".svg?" + q.toString(), "/glideins?");
      clear(box).append(svg);
      box.dataset.drawn = "1";
    } catch (e) {
      clear(box).append(el("p", { className: "muted", text: "no chart: " + e.message }));
    }
  }

  async function load() {
    const q = pageQuery({ by: "entry" });
    for (const key of FIELDS) if (q.has(key)) document.getElementById("an-" + key).value = q.get(key);
    const filters = new URLSearchParams(q);
    filters.delete("by");
    document.getElementById("an-hints-link").href = "/hints?" + filters.toString();
    document.getElementById("an-outliers-link").href = "/outliers?" + filters.toString();
    try {
      const data = await api("/ui/api/analysis?" + q.toString());
      renderPhases(q, q.get("by"), data.phases);
      renderScripts(q, data);
      await Promise.all([...document.querySelectorAll(".chart-svg")].map((box) => drawChart(box, q)));
    } catch (e) {
      showMessage(e.message);
    }
    ready();
  }

  document.getElementById("an-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const form = new URLSearchParams(new FormData(ev.target));
    for (const [key, value] of [...form.entries()]) if (!value) form.delete(key);
    location.search = form.toString();
  });
  load();
})();
