// Drives headless Chromium for e2e/views_browser_test.go: builds the test
// host (host.js, on the official AppBridge), opens one MCP session per server
// over HTTP declaring the MCP Apps extension, renders each view with a real
// result and reports what the DOM shows. Usage: node browser.mjs CONFIG.json
// The report (JSON on stdout) is checked by the Go test; a step that cannot
// run throws (exit 1).
import { build } from "esbuild";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import puppeteer from "puppeteer-core";

const cfg = JSON.parse(readFileSync(process.argv[2], "utf8"));
const EXT = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };

// ---------- MCP over HTTP (the host's client) ----------

class Session {
  constructor(base) {
    this.base = base;
    this.id = null;
    this.seq = 0;
  }
  async post(msg) {
    const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
    if (this.id) headers["Mcp-Session-Id"] = this.id;
    const resp = await fetch(this.base + "/mcp", { method: "POST", headers, body: JSON.stringify(msg) });
    if (!this.id) this.id = resp.headers.get("Mcp-Session-Id");
    const text = await resp.text();
    if (msg.id === undefined) return null;
    const msgs = (resp.headers.get("Content-Type") || "").includes("text/event-stream")
      ? text.split("\n").filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5)))
      : [JSON.parse(text)];
    const answer = msgs.find((m) => m.id === msg.id);
    if (!answer) throw new Error("no answer to " + msg.method + ": " + text.slice(0, 300));
    if (answer.error) return { error: answer.error };
    return answer.result;
  }
  async rpc(method, params) {
    return this.post({ jsonrpc: "2.0", id: ++this.seq, method, params });
  }
  async open() {
    const init = await this.rpc("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: { extensions: EXT },
      clientInfo: { name: "parse-mcp-view-test", version: "1" },
    });
    await this.post({ jsonrpc: "2.0", method: "notifications/initialized" });
    this.tools = Object.fromEntries((await this.rpc("tools/list", {})).tools.map((t) => [t.name, t]));
    this.init = init;
    return this;
  }
  async call(name, args, meta) {
    const params = { name, arguments: args };
    if (meta) params._meta = meta;
    return this.rpc("tools/call", params);
  }
  async html(uri) {
    const res = await this.rpc("resources/read", { uri });
    return res.contents[0];
  }
}

const sessions = {};
for (const [name, base] of Object.entries(cfg.servers)) sessions[name] = await new Session(base).open();

// ---------- the browser ----------

const hostJS = await build({
  entryPoints: [join(import.meta.dirname, "host.js")],
  bundle: true,
  format: "iife",
  write: false,
  nodePaths: [join(import.meta.dirname, "..", "node_modules")],
});
const browser = await puppeteer.launch({
  executablePath: cfg.chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const report = { steps: {} };
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 940, height: 700 });
  page.on("console", (m) => process.stderr.write("[page] " + m.text() + "\n"));
  await page.exposeFunction("mcpCall", (server, method, params) => sessions[server].rpc(method, params));
  await page.setContent("<!doctype html><html><body style='margin:8px;font-family:sans-serif'></body></html>");
  await page.addScriptTag({ content: hostJS.outputFiles[0].text });

  // mount renders a tool's view with a real result and waits until the view
  // says it is drawn.
  async function mount(server, tool, args) {
    const s = sessions[server];
    const def = s.tools[tool];
    const uri = def?._meta?.ui?.resourceUri;
    if (!uri) throw new Error(tool + " names no view in tools/list");
    const res = await s.call(tool, args);
    if (res.error) throw new Error(tool + ": " + JSON.stringify(res.error));
    const content = await s.html(uri);
    await page.evaluate(() => (window.viewCalls = []));
    await page.evaluate((p) => window.mount(p), { server, html: content.text, tool: def, args, result: res });
    const frame = await (await page.waitForSelector("#frame")).contentFrame();
    await frame.waitForFunction(() => document.body.dataset.ready === "1", { timeout: 20000 });
    return { frame, result: res, uri, html: content.text, meta: content._meta };
  }
  const shot = async (name) => {
    const el = await page.$("#frame");
    await el.screenshot({ path: join(cfg.screenshots, name + ".png") });
  };
  const texts = (frame, sel) => frame.$$eval(sel, (els) => els.map((e) => e.textContent));
  const columnValues = (frame, col) =>
    frame.$$eval("table tbody tr", (trs, i) => trs.map((tr) => tr.children[i]?.textContent), col);

  // rows: query_class on the demo, sort, page, a pointer.
  {
    const { frame, result, html, meta } = await mount("demo", "query_class", cfg.rows.args);
    const cols = await texts(frame, "thead th");
    const plays = cols.indexOf("plays");
    const firstPage = await frame.$$eval("tbody tr", (r) => r.length);
    await frame.click(`th[data-col="plays"]`);
    const asc = await columnValues(frame, plays);
    await frame.click(`th[data-col="plays"]`);
    const desc = await columnValues(frame, plays);
    const dateCell = await frame.$eval(`tbody tr td[title]`, (td) => ({ shown: td.textContent, iso: td.title }));
    await frame.$eval(".scroll", (s) => (s.scrollLeft = 0));
    await shot("rows");
    await frame.click("button.next");
    const secondPage = await frame.$$eval("tbody tr", (r) => r.length);
    await frame.click("button.prev");
    await frame.click("button.copy");
    const copied = await frame.$eval("button.copy", (b) => ({ text: b.textContent, bytes: Number(b.dataset.csv || 0) }));
    const link = await frame.$eval("a.pointer", (a) => ({ cls: a.dataset.class, id: a.dataset.id, href: a.getAttribute("href") }));
    await frame.click("a.pointer");
    await frame.waitForFunction(() => document.querySelector(".detail table tbody tr"), { timeout: 20000 });
    const detail = await frame.$eval(".detail", (d) => d.textContent);
    await shot("rows-pointer");
    report.steps.rows = {
      columns: cols, firstPage, secondPage, asc, desc, dateCell, copied, link, detail,
      calls: await page.evaluate(() => window.viewCalls),
      resultRows: result.structuredContent.rows.length, html, meta,
    };
  }

  // rows from a CSV export.
  {
    const { frame, result } = await mount("demo", "export_data", cfg.rows.exportArgs);
    report.steps.export = {
      columns: await texts(frame, "thead th"),
      rows: await frame.$$eval("tbody tr", (r) => r.length),
      headers: result.structuredContent.headers,
      rowCount: result.structuredContent.row_count,
    };
  }

  // chart: group_by (bars) and group_by_date (a line), and the table switch.
  {
    const { frame, result } = await mount("demo", "group_by", cfg.chart.groupBy);
    const bars = await frame.$$eval("svg rect.bar", (rs) => rs.map((r) => [r.dataset.label, Number(r.dataset.value), Number(r.getAttribute("height"))]));
    await shot("chart-bar");
    await frame.click(`button[data-mode="table"]`);
    const tableRows = await frame.$$eval("tbody tr", (r) => r.length);
    report.steps.chart = { bars, tableRows, groups: result.structuredContent.groups };
    const byDate = await mount("demo", "group_by_date", cfg.chart.groupByDate);
    const points = await byDate.frame.$$eval("svg circle.point", (cs) => cs.map((c) => [c.dataset.label, Number(c.dataset.value)]));
    await shot("chart-line");
    report.steps.chartDate = { points, groups: byDate.result.structuredContent.groups };
    const agg = await mount("demo", "aggregate", cfg.chart.aggregate);
    report.steps.chartAggregate = {
      bars: await agg.frame.$$eval("svg rect.bar", (rs) => rs.map((r) => [r.dataset.label, Number(r.dataset.value)])),
      rows: agg.result.structuredContent.rows,
    };
  }

  // confirm: decline writes nothing; confirm writes once; the token is
  // single-use.
  {
    const declined = await mount("write", cfg.confirm.tool, cfg.confirm.declineArgs);
    const diffDecline = await declined.frame.$$eval("table.diff tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    await declined.frame.click("button.decline");
    const declineStatus = await declined.frame.$eval(".status", (s) => s.textContent);
    const declineCalls = await page.evaluate(() => window.viewCalls.filter((c) => c.name !== "get_object"));

    const confirmed = await mount("write", cfg.confirm.tool, cfg.confirm.confirmArgs);
    const diff = await confirmed.frame.$$eval("table.diff tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    await shot("confirm");
    await confirmed.frame.click("button.confirm");
    await confirmed.frame.waitForFunction(() => /written|error/.test(document.querySelector(".status").className), { timeout: 20000 });
    const confirmStatus = await confirmed.frame.$eval(".status", (s) => s.textContent);
    await shot("confirm-done");
    const calls = await page.evaluate(() => window.viewCalls.filter((c) => c.name !== "get_object"));
    const token = confirmed.result._meta?.["parse-mcp/confirmation"];
    // The same call with the same token again: the token is spent.
    const replay = await sessions.write.call(calls[0]?.name, calls[0]?.arguments, calls[0]?._meta);
    report.steps.confirm = { diffDecline, declineStatus, declineCalls, diff, confirmStatus, calls, replay, tokenPrefix: String(token || "").slice(0, 21) };
    // A change the diff of readable fields cannot show (the ACL): the view
    // must still show it before the person confirms.
    const acl = await mount("write", cfg.confirm.tool, cfg.confirm.aclArgs);
    report.steps.confirmACL = { text: await acl.frame.evaluate(() => document.body.innerText) };
  }

  // attacks: stored payloads, a hidden reference and a protected field on
  // the attack server; a call from inside the view on a hidden class.
  {
    const { frame, html } = await mount("attack", "query_class", cfg.attack.args);
    const dom = await frame.evaluate(() => ({
      text: document.body.innerText,
      html: document.documentElement.outerHTML,
      scripts: document.scripts.length,
      links: [...document.querySelectorAll("a")].map((a) => a.getAttribute("href")),
      handlers: [...document.querySelectorAll("*")].flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => a.name)),
      images: document.images.length,
    }));
    await shot("attack-rows");
    // What Copy CSV puts on the clipboard (the page's clipboard, caught).
    await frame.evaluate(() => Object.defineProperty(navigator, "clipboard", { configurable: true, value: { writeText: async (s) => void (window.copiedCSV = s) } }));
    await frame.click("button.copy");
    const csv = await frame.evaluate(() => window.copiedCSV);
    const fromView = async (args) =>
      frame.evaluate((a) => new Promise((resolve) => {
        const id = "probe-" + Math.random();
        const on = (ev) => {
          if (ev.data?.id === id) {
            window.removeEventListener("message", on);
            resolve(ev.data);
          }
        };
        window.addEventListener("message", on);
        window.parent.postMessage({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "get_object", arguments: a } }, "*");
      }), args);
    const hidden = await fromView({ class_name: cfg.attack.hiddenClass, object_id: cfg.attack.hiddenId });
    const missing = await fromView({ class_name: cfg.attack.missingClass, object_id: cfg.attack.hiddenId });
    const global = await frame.evaluate(() => document.title);
    report.steps.attack = { dom, hidden, missing, global, html, csv };
  }
} finally {
  await browser.close();
}
writeFileSync(cfg.report, JSON.stringify(report));
