// gwtrace UI helpers shared by every page.
//
// Rule for the whole UI: trace data (span names, attributes, events, resource
// values) only reaches the page as text nodes (el() and textContent), never
// through innerHTML, so a span called "<script>..." is shown, not run.
"use strict";

const gw = (() => {
  const TOKEN_KEY = "gwtrace.token";

  /** Create an element: el("td", {className: "num", title: "..."}, "text", child...). */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [key, value] of Object.entries(props)) {
        if (value === undefined || value === null) continue;
        if (key === "dataset") Object.assign(node.dataset, value);
        else if (key === "style") Object.assign(node.style, value);
        else if (key === "text") node.textContent = value;
        else node[key] = value;
      }
    }
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function showMessage(text, kind) {
    const box = document.getElementById("message");
    box.textContent = text;
    box.className = "message " + (kind || "error");
    box.hidden = !text;
  }

  function showAuth() {
    const section = document.getElementById("auth");
    section.hidden = false;
    document.getElementById("auth-token").focus();
  }

  document.addEventListener("DOMContentLoaded", () => {
    const form = document.getElementById("auth-form");
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, document.getElementById("auth-token").value);
      location.reload();
    });
  });

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  /** GET a path with the tab's token (the one place the token is sent). */
  function fetchWithToken(path, accept) {
    const headers = { Accept: accept };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    return fetch(path, { headers, credentials: "omit" });
  }

  /** GET a picture (SVG) with the tab's token, as a data: URL an <img> can show (no script runs in it). */
  async function picture(path) {
    const resp = await fetchPicture(path);
    const bytes = new Uint8Array(await resp.arrayBuffer());
    let binary = "";
    for (let i = 0; i < bytes.length; i += 8192) binary += String.fromCharCode(...bytes.subarray(i, i + 8192));
    return "data:image/svg+xml;base64," + btoa(binary);
  }

  // The SVG namespace, as the HTML parser gives it to an <svg> (the UI's source names no host, not even w3.org).
  const SVG_NS = new DOMParser().parseFromString("<svg></svg>", "text/html").querySelector("svg").namespaceURI;
  // What a matplotlib chart is drawn with; anything else (script, foreignObject, style, metadata) is dropped.
  const SVG_TAGS = new Set(["svg", "g", "path", "rect", "circle", "ellipse", "line", "polyline", "polygon", "text",
    "tspan", "defs", "clipPath", "use", "a", "title", "desc"]);

  /** Keep a parsed SVG element only if harmless: drawing elements, links into this server, no script, no style
   * (the server sends presentation attributes instead: the CSP refuses inline styles). */
  function cleanSvg(node, linkPrefix) {
    for (const child of [...node.children]) {
      if (child.namespaceURI !== SVG_NS || !SVG_TAGS.has(child.localName)) child.remove();
      else cleanSvg(child, linkPrefix);
    }
    for (const attr of [...node.attributes]) {
      const name = attr.localName.toLowerCase();
      if (name === "href") {
        const ok = node.localName === "a" ? attr.value.startsWith(linkPrefix) : attr.value.startsWith("#");
        node.removeAttributeNode(attr);
        if (ok) node.setAttribute("href", attr.value);
      } else if (name.startsWith("on") || name === "target" || name === "style" || attr.value.trim().toLowerCase().startsWith("javascript:")) {
        node.removeAttributeNode(attr);
      }
    }
  }

  /** GET an SVG chart with the tab's token and return it as inline SVG: its links (under linkPrefix) work,
   * nothing in it can run (see cleanSvg). */
  async function svgChart(path, linkPrefix) {
    const resp = await fetchPicture(path);
    const doc = new DOMParser().parseFromString(await resp.text(), "image/svg+xml");
    const root = doc.documentElement;
    if (root.namespaceURI !== SVG_NS || root.localName !== "svg") throw new ApiError(500, "not an SVG picture");
    cleanSvg(root, linkPrefix);
    root.removeAttribute("width");
    root.removeAttribute("height");
    return document.importNode(root, true);
  }

  async function fetchPicture(path) {
    const resp = await fetchWithToken(path, "image/svg+xml");
    if (resp.status === 401) {
      showAuth();
      throw new ApiError(401, "this server needs a token");
    }
    if (!resp.ok) {
      let msg = resp.status + " " + resp.statusText;
      try {
        const body = await resp.json();
        if (body && body.error) msg = typeof body.error === "string" ? body.error : body.error.message;
      } catch (e) { /* not JSON: keep the status line */ }
      throw new ApiError(resp.status, msg);
    }
    return resp;
  }

  /** GET a JSON API path with the tab's token; 401 opens the token form. */
  async function api(path) {
    const resp = await fetchWithToken(path, "application/json");
    let body = null;
    try {
      body = await resp.json();
    } catch (e) {
      body = null;
    }
    if (resp.status === 401) {
      showAuth();
      throw new ApiError(401, "this server needs a token");
    }
    if (!resp.ok) {
      let msg = resp.status + " " + resp.statusText;
      if (body && body.errors && body.errors.length) msg = body.errors[0].msg;
      else if (body && body.error) msg = typeof body.error === "string" ? body.error : body.error.message;
      throw new ApiError(resp.status, msg);
    }
    return body;
  }

  // ------------------------------------------------------------ formatting

  /** Microseconds as a short human duration. */
  function fmtDuration(us) {
    if (us < 1000) return us + "µs";
    if (us < 1e6) return (us / 1000).toFixed(us < 1e4 ? 2 : 1) + "ms";
    const s = us / 1e6;
    if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + String(Math.round(s % 60)).padStart(2, "0") + "s";
    return Math.floor(s / 3600) + "h" + String(Math.floor((s % 3600) / 60)).padStart(2, "0") + "m";
  }

  function pad(n, w) {
    return String(n).padStart(w || 2, "0");
  }

  /** Epoch microseconds as local "YYYY-MM-DD HH:MM:SS.mmm". */
  function fmtTime(us) {
    const d = new Date(us / 1000);
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + "." + pad(d.getMilliseconds(), 3);
  }

  function fmtValue(v) {
    if (typeof v === "string") return v;
    return JSON.stringify(v);
  }

  /** "error", "ok" or "unset" from a Jaeger span's tags. */
  function statusOf(span) {
    let status = "unset";
    for (const t of span.tags) {
      if ((t.key === "error" && t.value === true) || (t.key === "otel.status_code" && t.value === "ERROR")) return "error";
      if (t.key === "otel.status_code" && t.value === "OK") status = "ok";
    }
    return status;
  }

  function tagValue(tags, key) {
    for (const t of tags || []) if (t.key === key) return t.value;
    return undefined;
  }

  function kvTable(tags, className) {
    const table = el("table", { className: className || "kv" });
    const tbody = el("tbody");
    for (const t of tags) {
      tbody.append(el("tr", null, el("th", { text: t.key }), el("td", { text: fmtValue(t.value) })));
    }
    table.append(tbody);
    return table;
  }

  /** Fill the detail panel with one Jaeger span (and its process, if known). */
  function renderDetail(panel, span, process, traceStart) {
    clear(panel);
    const status = statusOf(span);
    panel.append(el("h2", { className: "detail-title", text: span.operationName }));
    const meta = el("dl", { className: "meta" });
    const add = (k, v) => meta.append(el("dt", { text: k }), el("dd", { text: v }));
    add("Service", process ? process.serviceName : span.serviceName || "");
    add("Status", status + (tagValue(span.tags, "otel.status_description") ? " — " + tagValue(span.tags, "otel.status_description") : ""));
    add("Duration", fmtDuration(span.duration));
    add("Start", fmtTime(span.startTime) + (traceStart !== undefined ? "  (+" + fmtDuration(span.startTime - traceStart) + ")" : ""));
    add("Span ID", span.spanID);
    const parent = (span.references || []).find((r) => r.refType === "CHILD_OF");
    add("Parent", parent ? parent.spanID : "(root)");
    add("Trace", span.traceID);
    panel.append(meta);
    panel.append(el("p", null, el("a", { href: "/trace/" + encodeURIComponent(span.traceID) + "#" + encodeURIComponent(span.spanID), text: "open in trace view" })));
    panel.dataset.status = status;
    const failure = failureOf(span);
    if (failure) panel.append(failure);

    const hidden = new Set(["otel.status_code", "otel.status_description", "error"]);
    const attrs = span.tags.filter((t) => !hidden.has(t.key));
    panel.append(el("h3", { text: "Attributes (" + attrs.length + ")" }));
    panel.append(attrs.length ? kvTable(attrs, "kv span-attributes") : el("p", { className: "muted", text: "none" }));

    panel.append(el("h3", { text: "Events (" + span.logs.length + ")" }));
    if (!span.logs.length) panel.append(el("p", { className: "muted", text: "none" }));
    const list = el("ol", { className: "events" });
    for (const log of span.logs) {
      const name = tagValue(log.fields, "event") || "(event)";
      const fields = log.fields.filter((f) => f.key !== "event");
      list.append(el("li", null,
        el("span", { className: "event-time", text: "+" + fmtDuration(Math.max(0, log.timestamp - span.startTime)) }),
        " ", el("strong", { className: "event-name", text: name }),
        fields.length ? kvTable(fields) : null));
    }
    if (span.logs.length) panel.append(list);

    if (process && process.tags.length) {
      panel.append(el("details", null, el("summary", { text: "Resource (" + process.tags.length + ")" }), kvTable(process.tags)));
    }
  }

  /**
   * A failed span in its own words: where it failed and what its process wrote to stderr just
   * before (the `exception` event the sidecar adds, gwtrace/sidecar/failure.py), or null.
   * Text from the node only ever goes in through textContent.
   */
  function failureOf(span) {
    const log = (span.logs || []).find((l) => tagValue(l.fields, "event") === "exception");
    if (!log) return null;
    const f = (key) => tagValue(log.fields, key);
    const where = [];
    const path = f("code.file.path"), line = f("code.line.number");
    if (path || line) where.push("at " + (path || "?") + (line ? ":" + line : ""));
    if (f("code.function.name")) where.push("in " + f("code.function.name"));
    if (f("gwtrace.failed.command")) where.push("(" + f("gwtrace.failed.command") + " failed)");
    const box = el("section", { className: "failure" });
    box.append(el("h3", { text: "Failure" }));
    if (where.length) box.append(el("p", { className: "failure-where", text: where.join(" ") }));
    const message = f("exception.message");
    if (f("gwtrace.stderr.lines") && message) {
      box.append(el("p", { className: "muted", text: "stderr, last " + f("gwtrace.stderr.lines") + " line(s):" }));
      box.append(el("pre", { className: "failure-stderr", text: String(message) }));
    } else if (message) {
      box.append(el("p", { className: "failure-message", text: String(message) }));
    }
    return box;
  }

  /** Tick marks for an axis spanning `total` µs: about `count` round steps. */
  function ticks(total, count) {
    const raw = total / Math.max(1, count);
    const mag = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
    const out = [];
    for (let t = 0; t <= total + 1e-9; t += step) out.push(t);
    return out;
  }

  /** The page's query string, empty values dropped (and defaults set, as {by: "entry"}). */
  function pageQuery(defaults) {
    const q = new URLSearchParams(location.search);
    for (const [key, value] of Object.entries(defaults || {})) if (!q.has(key)) q.set(key, value);
    for (const [key, value] of [...q.entries()]) if (!value) q.delete(key);
    return q;
  }

  /**
   * The page's subject from its address (a trace id, a job id, a glidein uuid), decoded; null, with one
   * line on the page, when the address holds a malformed %-escape (decodeURIComponent throws on those,
   * and a throw here used to leave the page blank).
   */
  function subject(encoded, what) {
    try {
      return decodeURIComponent(encoded);
    } catch (e) {
      document.addEventListener("DOMContentLoaded", () => {
        showMessage("This address names no " + what + ": it holds a malformed %-escape (" + encoded.slice(0, 200) + ").");
        ready();
      });
      return null;
    }
  }

  /** The #… part of the address decoded, or "" (with a note on the page) when its %-escapes are malformed. */
  function hashPart() {
    try {
      return decodeURIComponent(location.hash.slice(1));
    } catch (e) {
      showMessage("Ignored the #… part of the address: it holds a malformed %-escape.", "info");
      return "";
    }
  }

  /** Mark the page as drawn; readyMs (ms since navigation start) is what bench/serve reports. */
  function ready() {
    document.body.dataset.readyMs = String(Math.round(performance.now()));
    document.body.dataset.ready = "1";
  }

  return { el, clear, api, picture, svgChart, cleanSvg, pageQuery, ready, subject, hashPart, ApiError, showMessage, fmtDuration, fmtTime, fmtValue, statusOf, tagValue, kvTable, renderDetail, failureOf, ticks };
})();
