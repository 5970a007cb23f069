// parse-mcp's MCP Apps views (docs/views.md). One bundle serves three views;
// the page's <meta name="parse-mcp-view"> says which. Every value shown comes
// from a tool result the host hands the view, or from a tool call the view
// asks the host to make; values are only ever set as text (textContent,
// attribute values), never parsed as HTML, and no link leaves the view.
import { App } from "@modelcontextprotocol/ext-apps";
import css from "./style.css";

document.head.append(Object.assign(document.createElement("style"), { textContent: css }));
const view = document.querySelector('meta[name="parse-mcp-view"]')?.content || "rows";
const root = document.getElementById("app");
const app = new App({ name: "parse-mcp-" + view, version: "1.0.0" }, {});
const PAGE = 25;
const CONFIRM_KEY = "parse-mcp/confirmation";

let toolArgs = null;

// el builds an element: attrs are set as attributes (values as strings),
// children appended as nodes or as text.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null) e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

function show(...nodes) {
  clear(root);
  root.append(...nodes);
}

function structured(result) {
  if (result?.structuredContent && typeof result.structuredContent === "object") return result.structuredContent;
  const text = result?.content?.find((c) => c.type === "text")?.text;
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

function errorText(result) {
  return result?.content?.find((c) => c.type === "text")?.text || "the call failed";
}

// plain turns a REST value (Pointer, Date) into the compact one the other
// results use.
function plain(v) {
  if (v && typeof v === "object" && !Array.isArray(v)) {
    if (v.__type === "Pointer") return v.objectId;
    if (v.__type === "Date") return v.iso;
  }
  return v;
}

function cellText(v) {
  v = plain(v);
  if (v === null || v === undefined) return "";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function formatDate(v) {
  const d = new Date(v);
  return isNaN(d) ? cellText(v) : d.toLocaleString();
}

// ---------- rows ----------

// tableOf reads the rows a result holds: columns + rows (query_class,
// get_objects, search), a CSV export, a single object, or a list of groups.
function tableOf(data) {
  if (Array.isArray(data?.columns) && Array.isArray(data?.rows)) {
    return { columns: data.columns, rows: data.rows };
  }
  if (typeof data?.output === "string" && data?.format === "csv") {
    const rows = parseCSV(data.output);
    return { columns: rows.shift() || [], rows };
  }
  if (Array.isArray(data?.groups)) {
    return { columns: ["key", "value"], rows: data.groups.map((g) => [g.key, g.value]) };
  }
  if (data?.object && typeof data.object === "object") {
    const columns = Object.keys(data.object);
    return { columns, rows: [columns.map((c) => data.object[c])] };
  }
  return { columns: [], rows: [] };
}

function parseCSV(text) {
  const rows = [];
  let row = [], field = "", quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") row.push(field), (field = "");
    else if (ch === "\n") row.push(field), rows.push(row), (row = []), (field = "");
    else if (ch !== "\r") field += ch;
  }
  if (field !== "" || row.length) row.push(field), rows.push(row);
  return rows;
}

// csvOf is what Copy CSV puts on the clipboard, for a spreadsheet: a cell
// (or a field's name) that a spreadsheet would run as a formula — starting
// with =, +, -, @, a tab or CR, and not a plain number — gets a leading ',
// so a stored =HYPERLINK(…) stays text (docs/views.md).
function csvOf(columns, rows) {
  const q = (s) => (/[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s);
  const inert = (s) => (/^[=+\-@\t\r]/.test(s) && !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s) ? "'" + s : s);
  return [columns, ...rows.map((r) => r.map(cellText))].map((r) => r.map((c) => q(inert(String(c)))).join(",")).join("\n") + "\n";
}

function compare(a, b) {
  a = plain(a);
  b = plain(b);
  if (a === b) return 0;
  if (a === null || a === undefined || a === "") return 1;
  if (b === null || b === undefined || b === "") return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return cellText(a).localeCompare(cellText(b), undefined, { numeric: true });
}

async function openPointer(className, objectId, panel) {
  clear(panel);
  panel.append(el("p", { class: "muted" }, "get_object " + className + " " + objectId + " …"));
  let result;
  try {
    result = await app.callServerTool({ name: "get_object", arguments: { class_name: className, object_id: objectId } });
  } catch (e) {
    result = { isError: true, content: [{ type: "text", text: String(e?.message || e) }] };
  }
  clear(panel);
  if (result.isError) {
    panel.append(el("p", { class: "error" }, errorText(result)));
    return;
  }
  renderTable(panel, structured(result), { title: className + " " + objectId });
}

// renderTable draws a sortable, paginated table of data into container.
function renderTable(container, data, opts = {}) {
  const { columns, rows } = tableOf(data);
  const pointers = data?.pointer_classes || {};
  const dates = new Set(data?.date_fields || ["createdAt", "updatedAt"]);
  let sortCol = -1, sortDir = 1, page = 0;
  const wrap = el("div", { class: "rows" });
  const detail = el("div", { class: "detail" });
  const status = el("span", { class: "muted status" });
  const copy = el("button", { type: "button", class: "copy" }, "Copy CSV");
  copy.addEventListener("click", async () => {
    const csv = csvOf(columns, sorted());
    try {
      await navigator.clipboard.writeText(csv);
    } catch {
      const ta = el("textarea", {}, csv);
      document.body.append(ta);
      ta.select();
      document.execCommand("copy");
      ta.remove();
    }
    copy.textContent = "Copied";
    copy.dataset.csv = String(csv.length);
  });
  const prev = el("button", { type: "button", class: "prev" }, "‹");
  const next = el("button", { type: "button", class: "next" }, "›");
  prev.addEventListener("click", () => ((page = Math.max(0, page - 1)), draw()));
  next.addEventListener("click", () => ((page = page + 1), draw()));
  const table = el("table", {});
  const head = el("tr", {});
  columns.forEach((c, i) => {
    const th = el("th", { "data-col": c, title: "sort by " + c }, c);
    th.addEventListener("click", () => {
      sortDir = sortCol === i ? -sortDir : 1;
      sortCol = i;
      page = 0;
      draw();
    });
    head.append(th);
  });
  table.append(el("thead", {}, head));
  const body = el("tbody", {});
  table.append(body);

  function sorted() {
    if (sortCol < 0) return rows;
    return rows.map((r, i) => [r, i]).sort((x, y) => compare(x[0][sortCol], y[0][sortCol]) * sortDir || x[1] - y[1]).map((x) => x[0]);
  }

  function cell(col, v) {
    const td = el("td", {});
    v = plain(v);
    if (pointers[col] && typeof v === "string" && v !== "") {
      const a = el("a", { href: "#", class: "pointer", "data-class": pointers[col], "data-id": v }, v);
      a.addEventListener("click", (ev) => {
        ev.preventDefault();
        openPointer(pointers[col], v, detail);
      });
      td.append(a);
    } else if (dates.has(col) && typeof v === "string" && v !== "") {
      td.title = v;
      td.append(formatDate(v));
    } else {
      if (typeof v === "number") td.className = "num";
      td.append(cellText(v));
    }
    return td;
  }

  function draw() {
    const all = sorted();
    const pages = Math.max(1, Math.ceil(all.length / PAGE));
    page = Math.min(page, pages - 1);
    clear(body);
    for (const r of all.slice(page * PAGE, page * PAGE + PAGE)) {
      body.append(el("tr", {}, columns.map((c, i) => cell(c, r[i]))));
    }
    head.querySelectorAll("th").forEach((th, i) => {
      th.dataset.sort = i === sortCol ? (sortDir > 0 ? "asc" : "desc") : "";
    });
    status.textContent = all.length + " rows · page " + (page + 1) + " of " + pages;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }

  const bar = el("div", { class: "bar" }, opts.title ? el("strong", {}, opts.title) : null, status, prev, next, copy);
  wrap.append(bar, el("div", { class: "scroll" }, table), detail);
  draw();
  container.append(wrap);
  return wrap;
}

// ---------- chart ----------

// seriesOf reads label → number pairs: groups (group_by, group_by_date) or a
// two-column result whose second column is numeric (aggregate).
function seriesOf(data) {
  if (Array.isArray(data?.groups)) return data.groups.map((g) => [cellText(g.key), Number(g.value)]);
  if (Array.isArray(data?.columns) && data.columns.length === 2 && Array.isArray(data.rows) &&
      data.rows.length > 0 && data.rows.every((r) => typeof r[1] === "number")) {
    return data.rows.map((r) => [cellText(r[0]), r[1]]);
  }
  return null;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function drawChart(series, kind) {
  const W = 640, H = 300, L = 56, B = 64, T = 12;
  const max = Math.max(1, ...series.map((s) => s[1]));
  const plotW = W - L - 8, plotH = H - B - T;
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart " + kind, role: "img" });
  for (let i = 0; i <= 4; i++) {
    const y = T + plotH - (plotH * i) / 4;
    s.append(svg("line", { x1: L, x2: W - 8, y1: y, y2: y, class: "grid" }));
    s.append(svg("text", { x: L - 6, y: y + 4, class: "axis", "text-anchor": "end" }, Math.round((max * i) / 4).toLocaleString()));
  }
  const step = plotW / series.length;
  const every = Math.ceil(series.length / 16);
  const pts = [];
  series.forEach(([label, value], i) => {
    const h = (plotH * value) / max;
    const x = L + i * step;
    if (kind === "bar") {
      const r = svg("rect", { x: x + step * 0.1, y: T + plotH - h, width: step * 0.8, height: h, class: "bar", "data-label": label, "data-value": value });
      r.append(svg("title", {}, label + ": " + value.toLocaleString()));
      s.append(r);
    } else {
      pts.push([x + step / 2, T + plotH - h, label, value]);
    }
    if (i % every === 0) {
      s.append(svg("text", { x: x + step / 2, y: H - B + 14, class: "axis", "text-anchor": "end", transform: `rotate(-35 ${x + step / 2} ${H - B + 14})` }, label));
    }
  });
  if (kind === "line") {
    s.append(svg("polyline", { points: pts.map((p) => p[0] + "," + p[1]).join(" "), class: "line" }));
    for (const [x, y, label, value] of pts) {
      const c = svg("circle", { cx: x, cy: y, r: 3, class: "point", "data-label": label, "data-value": value });
      c.append(svg("title", {}, label + ": " + value.toLocaleString()));
      s.append(c);
    }
  }
  return s;
}

function renderChart(data) {
  const series = seriesOf(data);
  if (!series) {
    show(el("p", { class: "muted" }, "This result is not label → number; shown as a table."));
    renderTable(root, data);
    return;
  }
  // Dates as labels (group_by_date) read best as a line, the rest as bars.
  let mode = series.every(([label]) => /^\d{4}(-\d\d)*(T|$|\s|-W)/.test(label)) ? "line" : "bar";
  const area = el("div", { class: "chart-area" });
  const buttons = ["bar", "line", "table"].map((m) => {
    const b = el("button", { type: "button", "data-mode": m }, m[0].toUpperCase() + m.slice(1));
    b.addEventListener("click", () => ((mode = m), draw()));
    return b;
  });
  const title = [data?.class_name, data?.field || data?.operation].filter(Boolean).join(" · ");
  function draw() {
    clear(area);
    buttons.forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.mode === mode)));
    if (mode === "table") renderTable(area, { columns: ["label", "value"], rows: series });
    else area.append(drawChart(series, mode));
  }
  show(el("div", { class: "bar" }, el("strong", {}, title), el("span", { class: "muted" }, series.length + " groups"), ...buttons), area);
  draw();
}

// ---------- confirm ----------

function fieldsOf(obj) {
  const out = {};
  for (const [k, v] of Object.entries(obj || {})) out[k] = plain(v);
  return out;
}

async function renderConfirm(result) {
  const data = structured(result) || {};
  const op = data?.change?.operation;
  const token = result?._meta?.[CONFIRM_KEY];
  if (!data.dry_run || !op) {
    // A write that ran (or was refused): show what it answered.
    show(el("p", { class: result?.isError ? "error" : "muted" }, result?.isError ? errorText(result) : "Written."), renderTableOf(data));
    return;
  }
  let before = {}, after = {};
  if (op === "delete_object") before = fieldsOf(data.deleted_object);
  else after = fieldsOf(data.object);
  if (op === "update_object") {
    try {
      const cur = await app.callServerTool({ name: "get_object", arguments: { class_name: data.class_name, object_id: data.object_id } });
      if (!cur.isError) before = fieldsOf(structured(cur)?.object);
    } catch {
      /* before stays unknown */
    }
  }
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((k) => k !== "updatedAt" && k !== "createdAt");
  const changed = keys.filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]));
  const diff = el("table", { class: "diff" }, el("thead", {}, el("tr", {}, el("th", {}, "field"), el("th", {}, "before"), el("th", {}, "after"))));
  const body = el("tbody", {});
  for (const k of op === "update_object" ? changed : keys) {
    body.append(el("tr", { "data-field": k }, el("td", {}, k), el("td", { class: "before" }, op === "create_object" ? "" : cellText(before[k])), el("td", { class: "after" }, op === "delete_object" ? "" : cellText(after[k]))));
  }
  diff.append(body);
  const what = op.replace(/_/g, " ") + " on " + data.class_name + (op === "create_object" ? "" : " " + (data.object_id || ""));
  // Without a token the policy does not ask for confirmation of this write
  // (settings.confirm_writes): the view's call is the write as the model
  // could send it.
  const status = el("p", { class: "status muted" }, "Nothing is written until you confirm.");
  const yes = el("button", { type: "button", class: "confirm" }, "Confirm");
  const no = el("button", { type: "button", class: "decline" }, "Decline");
  yes.disabled = !toolArgs;
  const settle = (text, cls) => {
    yes.disabled = no.disabled = true;
    status.textContent = text;
    status.className = "status " + cls;
  };
  no.addEventListener("click", () => settle("Declined: nothing was written.", "declined"));
  yes.addEventListener("click", async () => {
    yes.disabled = no.disabled = true;
    const args = { ...toolArgs };
    delete args.dry_run;
    let res;
    try {
      res = await app.callServerTool(token ? { name: op, arguments: args, _meta: { [CONFIRM_KEY]: token } } : { name: op, arguments: args });
    } catch (e) {
      res = { isError: true, content: [{ type: "text", text: String(e?.message || e) }] };
    }
    if (res.isError) settle(errorText(res), "error");
    else settle("Confirmed: written.", "written");
  });
  // The diff shows the fields the person can read; the exact change (what
  // an elicitation would ask about) shows also what they cannot see there,
  // such as an ACL.
  const exact = el("pre", { class: "change" }, JSON.stringify(data.change, null, 2));
  show(el("h3", {}, "Confirm: " + what), diff, el("p", { class: "muted" }, "Exactly this will change in the database:"), exact, el("div", { class: "actions" }, yes, no), status);
}

function renderTableOf(data) {
  const d = el("div", {});
  renderTable(d, data);
  return d;
}

// ---------- wiring ----------

app.ontoolinput = (params) => {
  toolArgs = params?.arguments || null;
};

app.ontoolresult = (result) => {
  document.body.dataset.ready = "0";
  const done = () => (document.body.dataset.ready = "1");
  if (result?.isError && view !== "confirm") {
    show(el("p", { class: "error" }, errorText(result)));
    return done();
  }
  if (view === "confirm") return renderConfirm(result).then(done, done);
  const data = structured(result);
  if (view === "chart") renderChart(data);
  else show(), renderTable(root, data);
  done();
};

app.connect().catch((e) => show(el("p", { class: "error" }, "could not connect to the host: " + (e?.message || e))));
