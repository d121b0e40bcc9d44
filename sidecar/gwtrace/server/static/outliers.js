// Outliers page: glideins whose phase is far longer than the same phase at the same entry, farthest first.
"use strict";

(() => {
  const { el, clear, api, pageQuery, showMessage, ready } = gw;

  function minutes(seconds) {
    return (seconds / 60).toFixed(1);
  }

  async function load() {
    const q = pageQuery();
    document.getElementById("out-filters").textContent =
      [...q.entries()].map(([k, v]) => k + " = " + v).join(", ") || "all glideins in the store";
    try {
      const data = await api("/ui/api/outliers?" + q.toString());
      document.getElementById("out-title").textContent = data.outliers.length + " outliers (at least " +
        minutes(data.min_extra_s) + " min longer than their entry's median)";
      const body = clear(document.querySelector("#out-table tbody"));
      for (const r of data.outliers) {
        body.append(el("tr", { dataset: { trace: r.trace_id, phase: r.phase } },
          el("td", { text: r.glidein }), el("td", { text: r.entry || "" }), el("td", { text: r.phase }),
          el("td", { className: "num", text: minutes(r.seconds) }),
          el("td", { className: "num", text: minutes(r.median_seconds) }),
          el("td", { className: "num", text: String(r.score) }),
          el("td", null, el("a", { href: "/trace/" + encodeURIComponent(r.trace_id), className: "trace-link", text: "trace" }))));
      }
      if (!data.outliers.length) body.append(el("tr", null, el("td", { colSpan: 7, text: "no outlier" })));
    } catch (e) {
      showMessage(e.message);
    }
    ready();
  }
  load();
})();
