// Hints page: what an operator should change first, ranked by the canonical hours it costs per day; each hint
// with its GlideinWMS knob, its evidence and the glideins that show it (each linked to its trace).
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

  function renderHint(hint, rank) {
    const links = el("ul", { className: "hint-glideins" });
    for (const g of hint.glideins) {
      links.append(el("li", null, el("a", { href: "/trace/" + encodeURIComponent(g.trace_id), className: "trace-link",
        text: g.glidein }), el("span", { className: "muted", text: " " + (g.site || "") + " · " + (g.entry || "") })));
    }
    const scope = Object.entries(hint.scope).map(([k, v]) => k + " " + v).join(", ");
    return el("li", { className: "hint", dataset: { kind: hint.kind, rank: String(rank) } },
      el("h2", { className: "hint-summary" }, el("span", { className: "hint-rank", text: "#" + rank + " " }),
        el("span", { text: hint.summary })),
      el("p", { className: "hint-cost", text: hint.cost_hours_per_day.toFixed(1) + " canonical h/day · " + hint.kind +
        " · " + scope }),
      el("p", { className: "hint-action" }, el("strong", { text: "Do: " }), el("span", { text: hint.action })),
      evidence(hint.evidence),
      el("p", { className: "muted", text: hint.count + " glideins; " + (hint.glideins.length < hint.count ?
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
      data.hints.forEach((hint, i) => list.append(renderHint(hint, i + 1)));
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
