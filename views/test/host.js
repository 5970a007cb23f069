// The test host: a page built with the extension's host-side SDK
// (AppBridge + PostMessageTransport) that mounts one view in a sandboxed
// frame, hands it a tool's input and result, and forwards the view's tool
// calls to the real server (window.mcpCall, bound by browser.mjs to an MCP
// session over HTTP). e2e/views_browser_test.go drives it.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

window.viewCalls = [];

window.mount = async ({ server, html, tool, args, result }) => {
  document.getElementById("frame")?.remove();
  const iframe = document.createElement("iframe");
  iframe.id = "frame";
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.style.cssText = "width:900px;height:640px;border:1px solid #ccc";
  document.body.append(iframe);
  const bridge = new AppBridge(null, { name: "parse-mcp-test-host", version: "1.0.0" },
    { serverTools: {}, openLinks: {} },
    { hostContext: { toolInfo: { tool }, theme: "light", displayMode: "inline" } });
  bridge.oncalltool = async (params) => {
    window.viewCalls.push(params);
    return await window.mcpCall(server, "tools/call", params);
  };
  const ready = new Promise((resolve) => {
    bridge.oninitialized = async () => {
      await bridge.sendToolInput({ arguments: args });
      await bridge.sendToolResult(result);
      resolve();
    };
  });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
  await ready;
};
