// Glideins page: the glideins behind an accounting number (same filters), each linked to its trace; the
// server counts, sorts and cuts a page at a time (/ui/api/glidein-records: page, per_page, sort, order).
"use strict";

(() => {
  const { el, clear, api, showMessage, ready } = gw;
  const FORM = ["entry", "site", "status", "since", "until", "per_page"];

  function when(epoch) {
    return epoch ? new Date(epoch * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "";
  }

  function go(changes) {
    const q = new URLSearchParams(location.search);
    for (const [k, v] of Object.entries(changes)) {
      if (v === "" || v === null || v === undefined) q.delete(k); else q.set(k, String(v));
    }
    location.search = q.toString();
  }

  function form(q) {
    for (const name of FORM) {
      const input = document.getElementById("gl-" + name.replace("_", "-"));
      if (input && q.get(name)) input.value = q.get(name);
    }
    document.getElementById("gl-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const changes = { page: "" };
      for (const name of FORM) changes[name] = document.getElementById("gl-" + name.replace("_", "-")).value.trim();
      go(changes);
    });
    for (const th of document.querySelectorAll("#gl-table th[data-sort]")) {
      const sort = th.dataset.sort;
      const current = (q.get("sort") || "started") === sort;
      const order = current && q.get("order") !== "desc" ? "desc" : "asc";
      if (current) th.textContent += q.get("order") === "desc" ? " ▼" : " ▲";
      th.classList.add("sortable");
      th.addEventListener("click", () => go({ sort: sort, order: order, page: "" }));
    }
  }

  function pager(data) {
    document.getElementById("gl-page").textContent = "page " + data.page + " of " + data.pages;
    const prev = document.getElementById("gl-prev"), next = document.getElementById("gl-next");
    prev.disabled = data.page <= 1;
    next.disabled = data.page >= data.pages;
    prev.addEventListener("click", () => go({ page: data.page - 1 }));
    next.addEventListener("click", () => go({ page: data.page + 1 }));
  }

  async function load() {
    const q = new URLSearchParams(location.search);
    form(q);
    document.getElementById("gl-filters").textContent =
      [...q.entries()].filter(([k]) => !["page", "per_page", "sort", "order"].includes(k))
        .map(([k, v]) => k + " = " + v).join(", ") || "all glideins";
    try {
      const data = await api("/ui/api/glidein-records?" + q.toString());
      const category = q.get("category");
      const phase = q.get("phase");
      document.getElementById("gl-title").textContent = data.total + " glideins" +
        (category ? " with " + category.replace(/_/g, " ") + " time" : "") +
        (phase ? " with time in " + phase.replace(/_/g, " ") : "") + (q.get("failed") === "1" ? ", failed" : "");
      if (phase) document.getElementById("gl-last").textContent = "Minutes in " + phase.replace(/_/g, " ");
      pager(data);
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
