// The official TypeScript MCP SDK client through parse-mcp's oauth mode:
// its own OAuth client discovers the metadata, registers (dynamic
// registration), runs PKCE and the token exchange; redirectToAuthorization
// is a person at the browser, played by a scripted form post (login page,
// then consent). Then it calls a tool, refreshes its tokens, and calls it
// again. It prints one JSON line of facts on stdout, with the last access
// token (the test uses it, then checks that no log line shows it).
//
// Environment: SDK_MODULES (node_modules holding @modelcontextprotocol/sdk),
// MCP_URL, PARSE_USER, PARSE_PASSWORD, TOOL, TOOL_ARGS (JSON).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const sdk = (p) => import(pathToFileURL(join(process.env.SDK_MODULES, '@modelcontextprotocol/sdk/dist/esm', p)).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const { auth, UnauthorizedError } = await sdk('client/auth.js');

const serverUrl = new URL(process.env.MCP_URL);
const redirectUrl = 'http://127.0.0.1:8976/callback';
const facts = { steps: [] };
let code;

// browser plays the person: GET the login page, post the username and
// password with the page's hidden fields and cookie, then approve.
async function browser(authorizationUrl) {
  facts.authorizeParams = Object.fromEntries(authorizationUrl.searchParams);
  delete facts.authorizeParams.code_challenge;
  delete facts.authorizeParams.state;
  let cookie = '';
  const keep = (res) => {
    for (const c of res.headers.getSetCookie()) cookie = c.split(';')[0];
  };
  const hidden = (html) => Object.fromEntries([...html.matchAll(/name="(request|csrf)" value="([^"]*)"/g)].map((m) => [m[1], m[2]]));
  let res = await fetch(authorizationUrl, { redirect: 'manual' });
  keep(res);
  let html = await res.text();
  if (res.status !== 200) throw new Error(`login page: ${res.status} ${html}`);
  const post = (fields) => fetch(new URL('/authorize', authorizationUrl), {
    method: 'POST', redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
    body: new URLSearchParams(fields),
  });
  res = await post({ ...hidden(html), step: 'login', username: process.env.PARSE_USER, password: process.env.PARSE_PASSWORD });
  html = await res.text();
  if (res.status !== 200) throw new Error(`login: ${res.status} ${html}`);
  facts.consentScopes = [...html.matchAll(/<li><code>([^<]*)<\/code><\/li>/g)].map((m) => m[1]);
  res = await post({ ...hidden(html), step: 'consent', decision: 'approve' });
  if (res.status !== 303) throw new Error(`consent: ${res.status} ${await res.text()}`);
  const back = new URL(res.headers.get('location'));
  facts.redirectedTo = back.origin + back.pathname;
  facts.iss = back.searchParams.get('iss');
  code = back.searchParams.get('code');
  facts.steps.push('browser');
}

const store = {};
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return {
      client_name: 'TypeScript SDK e2e', redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  },
  clientInformation() { return store.client; },
  saveClientInformation(c) { store.client = c; facts.registered = c.client_id.startsWith('pmcp_client_'); facts.steps.push('register'); },
  tokens() { return store.tokens; },
  saveTokens(t) { store.tokens = t; facts.steps.push('tokens'); facts.scope = t.scope; },
  redirectToAuthorization(u) { return browser(u); },
  saveCodeVerifier(v) { store.verifier = v; },
  codeVerifier() { return store.verifier; },
};

const client = new Client({ name: 'tssdk-oauth-e2e', version: '1.0.0' });
try {
  await client.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider }));
  throw new Error('connected without authorization');
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  facts.steps.push('401');
}
{
  const t = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
  await t.finishAuth(code);
}
await client.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider }));
const args = JSON.parse(process.env.TOOL_ARGS || '{}');
const first = await client.callTool({ name: process.env.TOOL, arguments: args });
facts.first = { isError: !!first.isError, text: first.content?.[0]?.text };

const before = store.tokens.access_token;
facts.refresh = await auth(provider, { serverUrl });
facts.rotated = store.tokens.access_token !== before;
const second = await client.callTool({ name: process.env.TOOL, arguments: args });
facts.second = { isError: !!second.isError, text: second.content?.[0]?.text };
facts.accessToken = store.tokens.access_token;
await client.close();
process.stdout.write(JSON.stringify(facts) + '\n');
