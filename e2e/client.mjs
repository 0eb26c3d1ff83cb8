// client.mjs drives one consult server through the official TypeScript MCP SDK client and
// prints one JSON line saying what happened. e2e_test.go runs it:
//
//	node client.mjs '<scenario json>'
//
// Scenario fields:
//
//	transport               "stdio" (spawn command with args) or "http" (connect to url)
//	command, args           the consult binary and its arguments (stdio)
//	url                     http://127.0.0.1:PORT/mcp (http)
//	tool, arguments         the tool call
//	timeout                 client request timeout in ms (the SDK's RequestOptions.timeout)
//	resetTimeoutOnProgress  RequestOptions.resetTimeoutOnProgress
//	progress                install an onprogress handler (which makes the SDK send a progressToken)
//	abortAfterMs            abort the call through an AbortController after this many ms (0: never)
//	lingerMs                after a failed call, keep the session open this long before closing,
//	                        so that only notifications/cancelled can have stopped the server's work
//	logLevel                when set, logging/setLevel to it and record notifications/message
//
// Output: {ok, result?: {isError, text, structuredContent}, error?: {name, code, message},
// startedAt, finishedAt, abortedAt (Date.now() ms: call sent, settled, abort() called),
// elapsedMs, progress: [{progress, total, message, at}],
// logs: [{level, data, at}], fatal?}. Times in progress and logs are ms since the call started.
// The exit status is 0 whenever the JSON line was printed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const sc = JSON.parse(process.argv[2] ?? "{}");
const out = { ok: false, progress: [], logs: [] };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function emit() {
  process.stdout.write(JSON.stringify(out) + "\n");
}

async function main() {
  const client = new Client({ name: "consult-e2e", version: "1.0.0" });
  const transport =
    sc.transport === "http"
      ? new StreamableHTTPClientTransport(new URL(sc.url))
      : new StdioClientTransport({ command: sc.command, args: sc.args ?? [], stderr: "inherit" });
  await client.connect(transport);

  let started = Date.now();
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    out.logs.push({ level: n.params.level, data: n.params.data, at: Date.now() - started });
  });
  if (sc.logLevel) await client.setLoggingLevel(sc.logLevel);
  // Listing the tools makes the SDK validate structuredContent against the output schema.
  await client.listTools();

  const opts = {};
  if (sc.timeout) opts.timeout = sc.timeout;
  if (sc.resetTimeoutOnProgress) opts.resetTimeoutOnProgress = true;
  if (sc.progress) {
    opts.onprogress = (p) => {
      out.progress.push({ progress: p.progress, total: p.total, message: p.message, at: Date.now() - started });
    };
  }
  let timer;
  if (sc.abortAfterMs > 0) {
    const ac = new AbortController();
    opts.signal = ac.signal;
    timer = setTimeout(() => {
      out.abortedAt = Date.now();
      ac.abort("e2e client abort");
    }, sc.abortAfterMs);
  }

  started = Date.now();
  out.startedAt = started;
  try {
    const res = await client.callTool({ name: sc.tool, arguments: sc.arguments ?? {} }, undefined, opts);
    out.finishedAt = Date.now();
    out.ok = true;
    out.result = {
      isError: !!res.isError,
      text: (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n"),
      structuredContent: res.structuredContent ?? null,
    };
  } catch (err) {
    out.finishedAt = Date.now();
    out.error = { name: err?.name ?? typeof err, code: err?.code ?? null, message: String(err?.message ?? err) };
  } finally {
    clearTimeout(timer);
  }
  out.elapsedMs = out.finishedAt - started;
  if (!out.ok && sc.lingerMs > 0) await sleep(sc.lingerMs);
  emit();
  await Promise.race([client.close().catch(() => {}), sleep(2000)]);
}

main()
  .catch((err) => {
    out.fatal = String(err?.stack ?? err);
    emit();
  })
  .finally(() => process.exit(0));
