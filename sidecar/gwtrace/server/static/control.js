// The controller page: rules and the audit log, from /api/control/*. Every value reaches the page as text
// (gw.el), never as markup: a rule's reason or a scope value named "<script>" is shown, not run.
"use strict";

(() => {
  const { el, clear, api, showMessage, ready } = gw;

  function when(seconds) {
    if (seconds === null || seconds === undefined) return "never";
    return new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }

  function scopeText(scope) {
    const parts = Object.entries(scope || {}).map(([k, v]) => k + "=" + v);
    return parts.length ? parts.join(" ") : "(everything)";
  }

  function short(value) {
    if (value === null || value === undefined) return "";
    const text = JSON.stringify(value);
    return text.length > 160 ? text.slice(0, 157) + "..." : text;
  }

  function drawRules(rules) {
    const body = clear(document.querySelector("#rules tbody"));
    for (const r of rules) {
      body.append(el("tr", { dataset: { rule: r.id } },
        el("td", { text: r.id }), el("td", { text: scopeText(r.scope) }), el("td", { text: r.operation || "" }),
        el("td", { text: r.level || "" }),
        el("td", { className: "num", text: r.sample_ratio === null ? "" : String(r.sample_ratio) }),
        el("td", { text: when(r.expires) }), el("td", { text: r.set_by + " (" + r.role + ")" }),
        el("td", { text: r.reason })));
    }
    document.getElementById("rules-empty").hidden = rules.length > 0;
  }

  function drawAudit(rows) {
    const body = clear(document.querySelector("#audit tbody"));
    for (const a of rows.slice().reverse()) {
      body.append(el("tr", { dataset: { seq: String(a.seq) } },
        el("td", { className: "num", text: String(a.seq) }), el("td", { text: when(a.at) }),
        el("td", { text: a.who + " (" + a.role + ")" }), el("td", { text: a.action }), el("td", { text: a.target }),
        el("td", { className: "mono", text: short(a.before) }), el("td", { className: "mono", text: short(a.after) })));
    }
  }

  async function load() {
    try {
      const [rules, audit] = await Promise.all([api("/api/control/rules"), api("/api/control/audit?limit=200")]);
      drawRules(rules.rules);
      drawAudit(audit.audit);
      const who = audit.who;
      document.getElementById("control-who").textContent =
        "You: " + who.name + " (" + who.role + (who.sites.length ? ": " + who.sites.join(", ") : "") + ")";
    } catch (e) {
      showMessage(e.message);
    }
    ready();
  }

  document.addEventListener("DOMContentLoaded", load);
})();
