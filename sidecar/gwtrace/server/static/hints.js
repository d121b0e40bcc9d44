// Hints page: what an operator should change first, ranked by the pilot time it costs per day (then, ranked on
// their own, the capacity requested but not running: a CE wait is not pilot time); each hint with its
// GlideinWMS knob, its evidence and the glideins that show it (each linked to its trace).
"use strict";

(() => {
  const { el, clear, api, pageQuery, showMessage, ready } = gw;

  function evidence(values) {
    const table = el("table", { className: "kv hint-evidence" });
    const body = el("tbody");
    for (const [key, value] of Object.entries(values)) {
      body.append(el("tr", null, el("th", { text: key.replace(/_/g, " ") }),
        el("td", { text: typeof value === "string" ? value : JSON.stringify(value) })));
    }
    table.append(body);
    return table;
  }

  const SHORT = { pilot_hours: "pilot h/day", requested_hours: "requested h/day, not running",
    overuse_hours: "over-request h/day" };
  // the hints whose evidence is jobs (the sidecars' samples: analysis/resources.py), not glideins
  const JOB_HINTS = new Set(["memory_over_request", "cores_over_request", "memory_leak"]);

  function renderHint(hint) {
    const rank = hint.rank;
    const links = el("ul", { className: "hint-glideins" });
    for (const g of hint.glideins) {
      links.append(el("li", null, el("a", { href: "/trace/" + encodeURIComponent(g.trace_id), className: "trace-link",
        text: g.glidein }), el("span", { className: "muted", text: " " + (g.site || "") + " · " + (g.entry || "") })));
    }
    const scope = Object.entries(hint.scope).map(([k, v]) => k + " " + v).join(", ");
    return el("li", { className: "hint", dataset: { kind: hint.kind, rank: String(rank) } },
      el("h2", { className: "hint-summary" }, el("span", { className: "hint-rank", text: "#" + rank + " " }),
        el("span", { text: hint.summary })),
      el("p", { className: "hint-cost", text: hint.cost_per_day.toFixed(1) + " " + SHORT[hint.cost_unit] +
        (hint.glideins_lost_per_day ? " · " + hint.glideins_lost_per_day.toFixed(1) + " glideins lost/day" : "") +
        " · " + hint.kind + " · " + scope + " · over " + hint.period_days.toFixed(1) + " days" }),
      el("p", { className: "hint-action" }, el("strong", { text: "Do: " }), el("span", { text: hint.action })),
      evidence(hint.evidence),
      el("p", { className: "muted", text: hint.count + (JOB_HINTS.has(hint.kind) ? " jobs; " : " glideins; ") + (hint.glideins.length < hint.count ?
        "the first " + hint.glideins.length + ":" : "all of them:") }),
      links);
  }

  async function load() {
    const q = pageQuery();
    document.getElementById("hints-filters").textContent =
      [...q.entries()].map(([k, v]) => k + " = " + v).join(", ") || "all glideins in the store";
    try {
      const data = await api("/ui/api/hints?" + q.toString());
      const list = clear(document.getElementById("hint-list"));
      let unit = null;
      for (const hint of data.hints) {
        if (hint.cost_unit !== unit) {
          unit = hint.cost_unit;
          list.append(el("li", { className: "hint-unit muted", text: "Ranked by " + hint.cost_unit_text + ":" }));
        }
        list.append(renderHint(hint));
      }
      if (!data.hints.length) {
        list.append(el("li", { className: "muted", text: "No hint: no threshold crossed (docs/analysis.md lists them)." }));
      }
    } catch (e) {
      showMessage(e.message);
    }
    ready();
  }
  load();
})();
