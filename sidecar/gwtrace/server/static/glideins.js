// Glideins page: the glideins behind an accounting number (same filters), each linked to its trace.
"use strict";

(() => {
  const { el, clear, api, showMessage, ready } = gw;

  function when(epoch) {
    return epoch ? new Date(epoch * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "";
  }

  async function load() {
    const q = new URLSearchParams(location.search);
    document.getElementById("gl-filters").textContent =
      [...q.entries()].map(([k, v]) => k + " = " + v).join(", ") || "all glideins";
    try {
      const data = await api("/ui/api/glidein-records?" + q.toString());
      const category = q.get("category");
      const phase = q.get("phase");
      document.getElementById("gl-title").textContent = data.glideins.length + (data.truncated ? "+" : "") +
        " glideins" + (category ? " with " + category.replace(/_/g, " ") + " time" : "") +
        (phase ? " with time in " + phase.replace(/_/g, " ") : "") + (q.get("failed") === "1" ? ", failed" : "");
      if (phase) document.getElementById("gl-last").textContent = "Minutes in " + phase.replace(/_/g, " ");
      const body = clear(document.querySelector("#gl-table tbody"));
      for (const g of data.glideins) {
        const name = g.cluster + "." + g.proc + "@" + (g.schedd || "?");
        const status = g.incomplete ? g.status + " (incomplete)" : g.status;
        body.append(el("tr", { dataset: { trace: g.trace_id } },
          el("td", null, el("a", { href: "/trace/" + g.trace_id, className: "trace-link", text: name })),
          el("td", { text: g.site || "" }), el("td", { text: g.entry || "" }), el("td", { text: g.frontend || "" }),
          el("td", { className: "nowrap", text: when(g.started) }), el("td", { className: "nowrap", text: when(g.ended) }),
          el("td", { className: g.status === "ERROR" ? "error-text" : "", text: status + (g.failed_script ? ": " + g.failed_script : "") }),
          el("td", { className: "num", text: g.cpus === null ? "" : String(g.cpus) }),
          el("td", { className: "num", text: String(g.jobs) }),
          el("td", { className: "num", text: phase ? (g.phase_seconds / 60).toFixed(1) :
            (category ? g.canonical_hours[category] : g.canonical_hours.total).toFixed(2) })));
      }
    } catch (e) {
      showMessage(e.message);
    }
    ready();
  }
  load();
})();
