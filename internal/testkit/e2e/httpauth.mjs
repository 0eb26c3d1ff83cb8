// httpauth.mjs connects to a consult --http server through the official TypeScript MCP SDK
// client three ways and prints one JSON line per attempt saying what the SDK reported.
// httpauth_test.go runs it:
//
//	node httpauth.mjs '{"url": "http://127.0.0.1:PORT/mcp", "token": "..."}'
//
// Attempts:
//
//	plain   no token and no auth provider: the SDK reports the 401 with its body
//	oauth   no token, with an OAuth client provider as interactive hosts give the transport
//	        (Claude Code, MCP Inspector): on the 401 the SDK runs OAuth discovery (RFC 9728,
//	        RFC 8414) and dynamic client registration, and reports what stopped it
//	token   the header Authorization: Bearer <token>: connects and lists the tools
//
// Output per attempt: {name, ok, tools?, error?: {name, message}, requests: ["METHOD /path"]}
// (requests: every HTTP request the SDK made, in order).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const { url, token } = JSON.parse(process.argv[2]);

// provider is an OAuthClientProvider that can register a client and would send the user to
// the authorization page (which a server without OAuth must never get to).
function provider() {
  let info, tokens, verifier;
  return {
    get redirectUrl() { return 'http://127.0.0.1:1/callback'; },
    get clientMetadata() {
      return { client_name: 'consult-e2e', redirect_uris: ['http://127.0.0.1:1/callback'], grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'none' };
    },
    clientInformation() { return info; },
    saveClientInformation(i) { info = i; },
    tokens() { return tokens; },
    saveTokens(t) { tokens = t; },
    redirectToAuthorization(u) { throw new Error(`the SDK was sent to authorize at ${u}`); },
    saveCodeVerifier(v) { verifier = v; },
    codeVerifier() { return verifier; },
  };
}

async function attempt(name, opts) {
  const requests = [];
  const logged = (u, init) => {
    requests.push(`${init?.method ?? 'GET'} ${new URL(u).pathname}`);
    return fetch(u, init);
  };
  const client = new Client({ name: 'consult-e2e', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { ...opts, fetch: logged });
  try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    await client.close();
    return { name, ok: true, tools: tools.length, requests };
  } catch (e) {
    await client.close().catch(() => {});
    return { name, ok: false, error: { name: e?.constructor?.name ?? typeof e, message: String(e?.message ?? e) }, requests };
  }
}

for (const [name, opts] of [
  ['plain', {}],
  ['oauth', { authProvider: provider() }],
  ['token', { requestInit: { headers: { Authorization: `Bearer ${token}` } } }],
]) {
  console.log(JSON.stringify(await attempt(name, opts)));
}
