/**
 * The Worker as wrangler builds it for deployment (the workerd tests in test/workers/ run it
 * through Vite and with the pool's own nodejs_compat instead):
 * - `wrangler deploy --dry-run` bundles it offline into a temporary directory and the size is
 *   printed, so a size regression shows up in every run;
 * - `wrangler dev` serves that same bundle, under wrangler.toml's flags (no nodejs_compat), on
 *   DynamoDB (dynalite), proving the AWS SDK's fetch build works in the deployed configuration.
 * Wrangler runs with metrics and the cf-fetch off, so it never reaches the internet.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { expect, it } from "vitest";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";
import { freePort } from "./support/server-process.js";

const root = join(import.meta.dirname, "..");
const wrangler = join(root, "node_modules", ".bin", "wrangler");

function wranglerEnv(logDir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CLOUDFLARE_CF_FETCH_ENABLED: "false",
    WRANGLER_SEND_METRICS: "false",
    // Keep wrangler's own log files out of the user's home directory.
    WRANGLER_LOG_PATH: logDir,
    NO_COLOR: "1",
  };
}

/** Resolves once wrangler dev prints "Ready on"; rejects with its output if it exits first. */
function ready(child: ChildProcess): Promise<void> {
  let output = "";
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("Ready on")) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`wrangler dev exited (${code}) before it was ready:\n${output}`)));
  });
}

it("wrangler deploy --dry-run bundles the Worker offline, with the LeaseObject Durable Object", async () => {
  const outdir = await mkdtemp(join(tmpdir(), "leasehold-worker-"));
  try {
    const { stdout } = await promisify(execFile)(wrangler, ["deploy", "--dry-run", "--outdir", outdir], {
      cwd: root,
      env: wranglerEnv(outdir),
      timeout: 120_000,
    });
    expect(stdout).toContain("--dry-run: exiting now.");
    expect(stdout).toMatch(/env\.LEASES \(LeaseObject\)\s+Durable Object/);
    const bundle = join(outdir, "worker.js");
    const bytes = (await stat(bundle)).size;
    const gzipped = gzipSync(await readFile(bundle)).length;
    console.log(`worker bundle: ${(bytes / 1024).toFixed(1)} KiB, gzip ${(gzipped / 1024).toFixed(1)} KiB`);
    expect(bytes).toBeGreaterThan(0);
    // Workers' paid-plan limit is 10 MiB gzipped and the free plan's 3 MiB: stay well inside the smaller.
    expect(gzipped).toBeLessThan(3 * 1024 * 1024);
    // The entry exports the Durable Object class under the name wrangler.toml binds.
    expect(await readFile(bundle, "utf8")).toMatch(/export\s*\{[^}]*LeaseObject/);
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
}, 120_000);

it("wrangler dev serves the deployable bundle on DynamoDB without nodejs_compat", async () => {
  const dynamo = dynamoClient(testEndpoint());
  const table = await createLeaseTable(dynamo);
  dynamo.destroy();
  const state = await mkdtemp(join(tmpdir(), "leasehold-wrangler-dev-"));
  const port = await freePort();
  const vars = {
    LEASEHOLD_STORE: `dynamodb://${table}?region=us-east-1&endpoint=${encodeURIComponent(testEndpoint())}`,
    LEASEHOLD_TOKENS: JSON.stringify([{ token: "bundle-test-token-0123", prefixes: [""], verbs: ["read", "write"] }]),
    AWS_ACCESS_KEY_ID: "leasehold-test",
    AWS_SECRET_ACCESS_KEY: "leasehold-test",
  };
  const args = ["dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(await freePort())];
  args.push("--persist-to", state, "--show-interactive-dev-session=false");
  for (const [key, value] of Object.entries(vars)) args.push("--var", `${key}:${value}`);
  // Its own process group, so the workerd it starts is stopped with it.
  const child = spawn(wrangler, args, { cwd: root, env: wranglerEnv(state), detached: true });
  try {
    await ready(child);
    const base = `http://127.0.0.1:${port}/v1/leases/${encodeURIComponent("bundle/dynamo")}`;
    const headers = { authorization: "Bearer bundle-test-token-0123", "content-type": "application/json" };
    const acquired = await fetch(`${base}/acquire`, {
      method: "POST",
      headers,
      body: JSON.stringify({ holder: "a", instance: "bundle-test-instance-0001", leaseMs: 10_000 }),
    });
    expect(acquired.status).toBe(200);
    expect(await acquired.json()).toMatchObject({ leader: true, lease: { holder: "a", term: 1, revision: "1" } });
    const read = await fetch(base, { headers });
    expect(await read.json()).toMatchObject({ holder: "a", term: 1, revision: "1" });
    expect((await fetch(base)).status).toBe(401);
    // The console's script rides in the bundle (wrangler's [build] step makes the module it imports).
    const script = await fetch(`http://127.0.0.1:${port}/ui/console.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
  } finally {
    if (child.pid !== undefined && child.exitCode === null) {
      const exited = once(child, "exit");
      process.kill(-child.pid, "SIGTERM");
      await exited;
    }
    await rm(state, { recursive: true, force: true });
  }
}, 120_000);
