// 'Now' page: glideins alive per site/entry (from the sidecars' live snapshots) and the sites' red lights.
"use strict";

(() => {
  const { el, clear, api, showMessage, ready, fmtDuration } = gw;
  const secs = (s) => (s === null || s === undefined ? "?" : fmtDuration(Math.round(s * 1e6)));
  const pct = (r) => Math.round(r * 100) + "%";

  function lights(health) {
    const rule = health.rule;
    document.getElementById("now-rule").textContent = "Failure rate of the last " + secs(rule.window_s) +
      " against the previous " + rule.baseline_days + " days; red at " + rule.factor + "x the baseline, " +
      pct(rule.min_jump) + " above it and " + rule.min_failures + " failures; amber when " + pct(rule.chronic) +
      " or more failed over the whole period (failing all along).";
    const list = clear(document.getElementById("now-lights"));
    if (!health.sites.length) list.append(el("li", { className: "muted", text: "No glidein ended in that time." }));
    for (const s of health.sites) {
      const light = s.light || (s.red ? "red" : "green");
      list.append(el("li", { className: "light " + light, dataset: { site: s.site, red: s.red ? "1" : "0", light: light } },
        el("span", { className: "dot", text: light === "green" ? "○" : "●" }), " ",
        el("strong", { text: s.site }),
        " " + s.recent_failed + "/" + s.recent_glideins + " failed now (" + pct(s.recent_rate) + "), baseline " +
        s.baseline_failed + "/" + s.baseline_glideins + " (" + pct(s.baseline_rate) + ")",
        s.why ? el("span", { className: s.red ? "error-text" : "amber-text", text: " — " + s.why }) : null));
    }
  }

  function entries(data) {
    const body = clear(document.querySelector("#now-entries tbody"));
    for (const c of data.entries) {
      const phases = Object.entries(c.phases).map(([p, n]) => p + " ×" + n).join(", ");
      body.append(el("tr", { dataset: { site: c.site, entry: c.entry } },
        el("td", { text: c.site }), el("td", { text: c.entry }), el("td", { className: "num", text: String(c.alive) }),
        el("td", { className: "num", text: String(c.jobs_running) }),
        el("td", { className: c.stopped_reporting ? "num error-text" : "num", text: String(c.stopped_reporting) }),
        el("td", { text: phases })));
    }
  }

  function spark(points) {
    // one line of text per entry: a bar per hour for running, and for idle and held where any (no SVG, no style:
    // nothing the CSP or the air-gap rule refuses); the exact counts in the title
    const bars = "▁▂▃▄▅▆▇█";
    const top = Math.max(1, ...points.map((p) => Math.max(p.running, p.idle, p.held)));
    const line = (state) => points.map((p) => (p[state] ? bars[Math.min(7, Math.floor(7 * p[state] / top + 0.999))] : " ")).join("");
    const parts = ["running", "idle", "held"].filter((s) => s === "running" || points.some((p) => p[s]));
    return el("span", { className: "spark mono", title: parts.map((s) => s + ": " + points.map((p) => p[s]).join(" ")).join("\n") },
      ...parts.map((s) => el("span", { className: "spark-" + s, text: s + " " + line(s) + " " })));
  }

  function factory(data, history) {
    const f = data.factory || { entries: [], totals: { idle: 0, running: 0, held: 0 } };
    document.getElementById("now-factory-totals").textContent = f.entries.length ?
      f.totals.idle + " idle, " + f.totals.running + " running, " + f.totals.held + " held" :
      "No Condor-G event in the last 4 days (gwtrace ingest --factory-logs reads the factory's logs).";
    const body = clear(document.querySelector("#now-factory tbody"));
    for (const e of f.entries) {
      const reasons = e.held_reasons.map((r) => r.glideins + "× " + r.reason + (r.code === null ? "" : " [code " + r.code + "/" + r.subcode + "]")).join("; ");
      const points = ((history || {}).entries || {})[e.entry];
      body.append(el("tr", { dataset: { entry: e.entry, site: e.site } },
        el("td", { text: e.site }), el("td", { text: e.entry }), el("td", { className: "num", text: String(e.idle) }),
        el("td", { className: "num", text: String(e.running) }),
        el("td", { className: e.held ? "num error-text" : "num", text: String(e.held) }),
        el("td", { text: reasons }), el("td", null, points ? spark(points) : "")));
    }
  }

  function glideins(data) {
    const body = clear(document.querySelector("#now-glideins tbody"));
    for (const g of data.glideins) {
      const name = g.uuid || g.key;
      const jobs = g.jobs.map((j) => (j.job_id || j.name) + " (" + secs(j.running_s) + ")").join(", ");
      body.append(el("tr", { dataset: { key: g.key, state: g.state } },
        el("td", null, g.uuid ? el("a", { href: "/glidein/" + encodeURIComponent(g.uuid), text: name }) : name),
        el("td", { text: g.site || "" }), el("td", { text: g.entry || "" }),
        el("td", { className: g.stale ? "error-text" : "", text: g.stale ? g.state + " (silent " + secs(g.last_report_s) + ")" : g.state }),
        el("td", { className: "mono", text: g.phase }), el("td", { className: "num", text: secs(g.phase_s) }),
        el("td", { className: "num", text: secs(g.age_s) }), el("td", { text: jobs }), el("td", { text: g.host || "" })));
    }
  }

  async function load() {
    try {
      const data = await api("/ui/api/now" + location.search);
      const t = data.totals;
      document.getElementById("now-totals").textContent = t.alive + " glidein(s) alive, " + t.jobs_running +
        " job(s) running, " + t.stopped_reporting + " stopped reporting";
      lights(data.health);
      let history = null;
      try { history = await api("/ui/api/factory-states"); } catch (e) { history = null; }
      factory(data, history);
      entries(data);
      glideins(data);
    } catch (e) {
      showMessage(e.message);
    }
    ready();
  }
  load();
  setInterval(load, 30000);   // what runs now changes: refetch every 30 s (snapshots come every minute)
})();
