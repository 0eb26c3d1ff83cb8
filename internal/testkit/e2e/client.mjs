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
//	token                   the bearer token the server requires (http)
//	tool, arguments         the tool call
//	timeout                 client request timeout in ms (the SDK's RequestOptions.timeout)
//	resetTimeoutOnProgress  RequestOptions.resetTimeoutOnProgress
//	progress                install an onprogress handler (which makes the SDK send a progressToken)
//	abortAfterMs            abort the call through an AbortController after this many ms (0: never)
//	timeoutOnCue            give up on the call as its timeout does (the SDK's cancellation with
//	                        McpError -32001 "Request timed out", the same message on the wire and
//	                        the same error) when told "timeout <step>" on stdin (and, with
//	                        progress, once a first progress notification has come), rather than
//	                        at a fixed time that a busy machine may reach before the server is ready
//	lingerOnCue             after a failed call, keep the session open until told "close" on
//	                        stdin (60 s at most), so that only notifications/cancelled can have
//	                        stopped the server's work before then
//	logLevel                when set, logging/setLevel to it and record notifications/message
//	steps                   instead of the single call above, a sequence of calls made one after
//	                        the other in the same session. Each step has the fields tool,
//	                        arguments, timeout, resetTimeoutOnProgress, progress, abortAfterMs,
//	                        timeoutOnCue, plus:
//	                          idFrom   set arguments.id from the structuredContent of the
//	                                   result of step idFrom (0-based) ...
//	                          idPath   ... at this dot path ("id" unless given; e.g.
//	                                   "consultations.0.id"). When that step has no such
//	                                   value, this step is not sent and fails with name
//	                                   "E2EError".
//	                        A step that fails does not stop the next ones. lingerOnCue
//	                        applies after the last step, when it failed.
//	exitWaitMs              stdio only: after the calls, close the server's stdin and wait up
//	                        to this long for it to exit by itself (the SDK's close() would send
//	                        SIGTERM after 2 s); the exit is reported in serverExit
//
// While it runs it prints one JSON line per event, as it happens, for the test to act on:
// {event: "sent", step} when a call is sent, {event: "progress", step, count, at} when it
// gets a progress notification (count so far, at ms since it was sent). Then, last:
//
// Output: {ok, result?: {isError, text, structuredContent}, error?: {name, code, message},
// startedAt, finishedAt, abortedAt (Date.now() ms: call sent, settled, abort() called),
// elapsedMs, progress: [{progress, total, message, at}],
// steps: [{the same fields, for each call}], serverPid?, serverExit?: {code, signal, at},
// logs: [{level, data, at}], sdkErrors: [{message, at (Date.now())}] (the SDK's onerror:
// e.g. a response to a request it had already given up on), fatal?}. The top-level call fields are those of the first
// (without steps, the only) call. Times in progress are ms since that call was sent, in logs
// ms since the first call was sent; serverExit.at is Date.now() when the server exited
// (null code and signal, and no at, when it had not exited within exitWaitMs).
// The exit status is 0 whenever the JSON line was printed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, LoggingMessageNotificationSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { createInterface } from "node:readline";

const sc = JSON.parse(process.argv[2] ?? "{}");
const out = { ok: false, progress: [], logs: [], steps: [], sdkErrors: [] };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function emit() {
  process.stdout.write(JSON.stringify(out) + "\n");
}

function event(e) {
  process.stdout.write(JSON.stringify(e) + "\n");
}

// Cues the test writes on stdin: "timeout <step>" and "close". waitCue(cue) resolves when cue
// has come (at once if it came already).
const cues = new Set();
const cueWaiters = new Map();
createInterface({ input: process.stdin }).on("line", (line) => {
  const cue = line.trim();
  cues.add(cue);
  cueWaiters.get(cue)?.forEach((resolve) => resolve());
  cueWaiters.delete(cue);
});
function waitCue(cue) {
  if (cues.has(cue)) return Promise.resolve();
  return new Promise((resolve) => cueWaiters.set(cue, [...(cueWaiters.get(cue) ?? []), resolve]));
}

const stepFields = ["tool", "arguments", "timeout", "resetTimeoutOnProgress", "progress", "abortAfterMs", "timeoutOnCue"];

// lookup follows a dot path ("consultations.0.id") into v.
function lookup(v, path) {
  for (const key of path.split(".")) {
    if (v === null || typeof v !== "object") return undefined;
    v = v[key];
  }
  return v;
}

// callStep makes one tools/call as step describes (the index-th) and returns what happened.
async function callStep(client, step, done, index) {
  const rec = { ok: false, progress: [] };
  const args = { ...(step.arguments ?? {}) };
  if (step.idFrom !== undefined && step.idFrom !== null) {
    const path = step.idPath || "id";
    const id = lookup(done[step.idFrom]?.result?.structuredContent, path);
    if (typeof id !== "string" || id === "") {
      rec.startedAt = rec.finishedAt = Date.now();
      rec.elapsedMs = 0;
      rec.error = { name: "E2EError", code: null, message: `step ${step.idFrom} has no structuredContent.${path}` };
      return rec;
    }
    args.id = id;
  }
  const opts = {};
  if (step.timeout) opts.timeout = step.timeout;
  if (step.resetTimeoutOnProgress) opts.resetTimeoutOnProgress = true;
  let started = Date.now();
  let progressed;
  const firstProgress = new Promise((resolve) => (progressed = resolve));
  if (step.progress) {
    opts.onprogress = (p) => {
      const at = Date.now() - started;
      rec.progress.push({ progress: p.progress, total: p.total, message: p.message, at });
      event({ event: "progress", step: index, count: rec.progress.length, at });
      progressed();
    };
  }
  let timer;
  if (step.abortAfterMs > 0) {
    const ac = new AbortController();
    opts.signal = ac.signal;
    timer = setTimeout(() => {
      rec.abortedAt = Date.now();
      ac.abort("e2e client abort");
    }, step.abortAfterMs);
  } else if (step.timeoutOnCue) {
    // The SDK's timeout handler cancels with this McpError; an abort whose reason it is
    // sends the same notifications/cancelled and fails the call with the same error.
    const ac = new AbortController();
    opts.signal = ac.signal;
    // With progress asked for, it gives up only once a first notification has come: the
    // cue and the server's notifications reach this process by different pipes, and the
    // server sends its first one before the upstream request the cue follows.
    waitCue(`timeout ${index}`).then(() => (step.progress ? firstProgress : null)).then(() => {
      rec.abortedAt = Date.now();
      ac.abort(McpError.fromError(ErrorCode.RequestTimeout, "Request timed out", { timeout: step.timeout }));
    });
  }

  started = Date.now();
  rec.startedAt = started;
  event({ event: "sent", step: index });
  try {
    const res = await client.callTool({ name: step.tool, arguments: args }, undefined, opts);
    rec.finishedAt = Date.now();
    rec.ok = true;
    rec.result = {
      isError: !!res.isError,
      text: (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n"),
      structuredContent: res.structuredContent ?? null,
    };
  } catch (err) {
    rec.finishedAt = Date.now();
    rec.error = { name: err?.name ?? typeof err, code: err?.code ?? null, message: String(err?.message ?? err) };
  } finally {
    clearTimeout(timer);
  }
  rec.elapsedMs = rec.finishedAt - started;
  return rec;
}

async function main() {
  const client = new Client({ name: "consult-e2e", version: "1.0.0" });
  const transport =
    sc.transport === "http"
      ? new StreamableHTTPClientTransport(new URL(sc.url), {
          requestInit: { headers: { Authorization: "Bearer " + sc.token } },
        })
      : new StdioClientTransport({ command: sc.command, args: sc.args ?? [], stderr: "inherit" });
  // Errors the SDK reports outside any call (a late response, a notification for a request
  // that is over): recorded, not fatal.
  client.onerror = (err) => out.sdkErrors.push({ message: String(err?.message ?? err).slice(0, 300), at: Date.now() });
  await client.connect(transport);

  // The SDK does not report how its server process ended; its private _process does. Watch
  // it from the start, so an exit is never missed.
  let serverExited;
  if (sc.transport !== "http" && transport._process) {
    const child = transport._process;
    out.serverPid = child.pid;
    serverExited = new Promise((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal, at: Date.now() }));
    });
  }

  let sessionStart = Date.now();
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    out.logs.push({ level: n.params.level, data: n.params.data, at: Date.now() - sessionStart });
  });
  if (sc.logLevel) await client.setLoggingLevel(sc.logLevel);
  // Listing the tools makes the SDK validate structuredContent against the output schema.
  await client.listTools();

  const steps = Array.isArray(sc.steps)
    ? sc.steps
    : [Object.fromEntries(stepFields.filter((k) => sc[k] !== undefined).map((k) => [k, sc[k]]))];
  sessionStart = Date.now();
  for (const [i, step] of steps.entries()) {
    out.steps.push(await callStep(client, step, out.steps, i));
  }
  Object.assign(out, out.steps[0] ?? {});
  const last = out.steps[out.steps.length - 1];
  if (last && !last.ok && sc.lingerOnCue) await Promise.race([waitCue("close"), sleep(60_000)]);

  if (sc.exitWaitMs > 0 && serverExited) {
    try {
      transport._process?.stdin?.end();
    } catch {
      // already gone
    }
    out.serverExit = (await Promise.race([serverExited, sleep(sc.exitWaitMs)])) ?? { code: null, signal: null };
  }
  emit();
  // When the server has exited, close() has nothing left to do; otherwise it ends stdin,
  // then sends SIGTERM after 2 s.
  await Promise.race([client.close().catch(() => {}), sleep(2000)]);
}

main()
  .catch((err) => {
    out.fatal = String(err?.stack ?? err);
    emit();
  })
  .finally(() => process.exit(0));
