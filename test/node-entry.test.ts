/**
 * `npm start` (src/runtime/node.ts): each documented variable changes what the running server does,
 * through `start(env)` in this process (with a manual clock where time matters), and start-up
 * refusals through real processes: `npm start` itself for the reproduction from the issue, and
 * the same entry under node + tsx for the rest. Exit status 1 and one line naming the variable.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Storage } from "@google-cloud/storage";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { ManualClock } from "../src/clock.js";
import { type StartedServer, serve, start } from "../src/runtime/node.js";
import { makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { TEST_INSTANCE, withInstance } from "./support/api-server.js";
import { repo, until } from "./support/cli-processes.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-node-entry-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = () => join(dir, `${files++}.db`);

const TOKEN = "node-entry-token-0123456789";
const TOKENS = JSON.stringify([{ name: "ci", token: TOKEN, prefixes: ["jobs/"], verbs: ["read", "write", "cas"] }]);

const running: StartedServer[] = [];
const logs: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
  logs.length = 0;
});

/** `npm start`'s entry in this process, on a free port and a fresh SQLite file unless told otherwise. */
async function startWith(env: Record<string, string>, clock?: ManualClock): Promise<StartedServer> {
  const started = await start(
    { PORT: "0", ...(env.LEASEHOLD_STORE ? {} : { LEASEHOLD_DB: file() }), ...env },
    { log: (line) => logs.push(line), ...(clock ? { clock } : {}) },
  );
  running.push(started);
  return started;
}

async function call(
  server: StartedServer,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.server.url}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(withInstance(path, body)) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const leasePath = (name: string) => `/v1/leases/${encodeURIComponent(name)}`;

/** Opens a watch stream and returns a reader that waits for text to appear in it. */
async function watch(server: StartedServer, name: string) {
  const abort = new AbortController();
  const response = await fetch(`${server.server.url}${leasePath(name)}/watch`, { signal: abort.signal });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  return {
    async until(what: string): Promise<string> {
      while (!text.includes(what)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${JSON.stringify(what)}`);
        text += value;
      }
      return text;
    },
    close: () => abort.abort(),
  };
}

describe("npm start reads every variable", () => {
  it("PORT: the port to listen on (0 = any free one)", async () => {
    const started = await startWith({ PORT: "0" });
    expect(started.server.port).toBeGreaterThan(0);
    expect(started.server.port).not.toBe(8787);
    expect((await call(started, "GET", "/healthz")).body).toEqual({ ok: true });
  });

  it("HOST: the address to bind", async () => {
    const started = await startWith({ HOST: "localhost" });
    expect(started.server.url).toMatch(/^http:\/\/localhost:\d+$/);
    expect(logs.at(-1)).toContain("bound to loopback localhost");
  });

  it("LEASEHOLD_DB: the SQLite file, created with its folder", async () => {
    const path = join(dir, "nested", "leases.db");
    await startWith({ LEASEHOLD_DB: path });
    expect(existsSync(path)).toBe(true);
    expect(logs.at(-1)).toContain(`store sqlite:${path} (LEASEHOLD_DB)`);
  });

  it("LEASEHOLD_STORE: a store URL instead of the SQLite file", async () => {
    const path = file();
    const started = await startWith({ LEASEHOLD_STORE: `sqlite:${path}` });
    expect((await call(started, "POST", `${leasePath("jobs/a")}/acquire`, { holder: "h", leaseMs: 5000 })).status).toBe(
      200,
    );
    const direct = new SqliteStore({ path });
    expect((await direct.get("jobs/a"))?.record).toMatchObject({ holder: "h", term: 1 });
    await direct.close();
    expect(logs.at(-1)).toContain(`store sqlite:${path};`);
  });

  it("LEASEHOLD_TOKENS: requests need a token in scope; the line names the scopes, never the token", async () => {
    const started = await startWith({ LEASEHOLD_TOKENS: TOKENS });
    expect((await call(started, "GET", leasePath("jobs/a"))).status).toBe(401);
    expect((await call(started, "GET", leasePath("other/a"), undefined, TOKEN)).status).toBe(403);
    expect((await call(started, "GET", leasePath("jobs/a"), undefined, TOKEN)).status).toBe(404);
    expect(logs.at(-1)).toContain('auth: 1 token (ci: read+write+cas on "jobs/")');
    expect(logs.join("\n")).not.toContain(TOKEN);
  });

  it("LEASEHOLD_INSECURE_NO_AUTH=1: no auth even off loopback, and the line says why", async () => {
    const started = await startWith({ HOST: "0.0.0.0", LEASEHOLD_INSECURE_NO_AUTH: "1" });
    expect(started.server.auth).toBe("insecure-no-auth");
    expect(logs.at(-1)).toContain("auth: none, because of LEASEHOLD_INSECURE_NO_AUTH=1");
  });

  it("LEASEHOLD_MAX_SKEW_MS: how far ahead of this server's clock a writer's acquiredAt may be", async () => {
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 2) });
    const started = await startWith({ LEASEHOLD_MAX_SKEW_MS: "5000" }, clock);
    const put = (name: string, acquiredAt: number) =>
      fetch(`${started.server.url}${leasePath(name)}`, {
        method: "PUT",
        headers: { "content-type": "application/json", "if-none-match": "*", "leasehold-instance": TEST_INSTANCE },
        body: JSON.stringify({ holder: "h", term: 1, leaseMs: 5000, metadata: {}, writeId: "w1", acquiredAt }),
      });
    expect((await put("jobs/ahead", clock.wallNow() + 5000)).status).toBe(201);
    const refused = await put("jobs/too-far", clock.wallNow() + 5001);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ errors: [{ path: "acquiredAt" }] });
    expect(logs.at(-1)).toContain("maxSkewMs 5000");
  });

  it("LEASEHOLD_MAX_SKEW_MS: an expired lease is free once renewedAt + leaseMs + the bound has passed", async () => {
    const clock = new ManualClock({ wallStart: Date.UTC(2026, 11, 2) });
    // Two instances on one file: the second judges the first's record by its stamp and the bound
    // (a record an instance wrote itself is free leaseMs after that write, src/api/own-writes.ts).
    const db = file();
    const writer = await startWith({ LEASEHOLD_MAX_SKEW_MS: "250", LEASEHOLD_DB: db }, clock);
    const started = await startWith({ LEASEHOLD_MAX_SKEW_MS: "250", LEASEHOLD_DB: db }, clock);
    const acquire = (holder: string) =>
      call(started, "POST", `${leasePath("jobs/skew")}/acquire`, { holder, leaseMs: 1000 });
    expect(
      (await call(writer, "POST", `${leasePath("jobs/skew")}/acquire`, { holder: "a", leaseMs: 1000 })).status,
    ).toBe(200);
    await clock.advance(1250);
    expect((await acquire("b")).status).toBe(409);
    await clock.advance(1);
    expect((await acquire("b")).body).toMatchObject({ leader: true, lease: { holder: "b", term: 2 } });
  });

  it("LEASEHOLD_WATCH_POLL_MS: a write made elsewhere reaches a watcher after that interval", async () => {
    const clock = new ManualClock({ wallStart: Date.now() });
    const path = file();
    // 300 ms, below the 1000 ms default: only the configured interval makes the event arrive.
    const started = await startWith({ LEASEHOLD_DB: path, LEASEHOLD_WATCH_POLL_MS: "300" }, clock);
    const name = uniqueName("poll");
    const stream = await watch(started, name);
    await stream.until('"free":true');
    const elsewhere = new SqliteStore({ path });
    await elsewhere.put(makeRecord(name, { holder: "elsewhere", renewedAt: clock.wallNow() }), null);
    await elsewhere.close();
    await clock.advance(300);
    expect(await stream.until('"holder":"elsewhere"')).toContain('"holder":"elsewhere"');
    stream.close();
  });

  it("LEASEHOLD_HEARTBEAT_MS: the keep-alive interval of watch streams", async () => {
    const clock = new ManualClock();
    // 200 ms, far below the 15 s default: only the configured interval makes the comment arrive.
    const started = await startWith({ LEASEHOLD_HEARTBEAT_MS: "200", LEASEHOLD_WATCH_POLL_MS: "3600000" }, clock);
    const stream = await watch(started, uniqueName("beat"));
    await stream.until("event: lease");
    await clock.advance(200);
    expect(await stream.until(": keep-alive")).toContain(": keep-alive");
    stream.close();
  });

  it("LEASEHOLD_TOKEN: the token sent to an http(s):// store", async () => {
    const backing = new MemoryStore();
    const api = await serve({ store: backing, port: 0, tokens: JSON.parse(TOKENS) });
    try {
      const started = await startWith({ LEASEHOLD_STORE: `${api.url}/`, LEASEHOLD_TOKEN: TOKEN });
      const acquired = await call(started, "POST", `${leasePath("jobs/proxied")}/acquire`, {
        holder: "h",
        leaseMs: 5000,
      });
      expect(acquired.status).toBe(200);
      expect((await backing.get("jobs/proxied"))?.record).toMatchObject({ holder: "h" });
    } finally {
      await api.close();
    }
  });

  describe("AWS_REGION and AWS_DEFAULT_REGION: the DynamoDB region when the URL has none", () => {
    let table = "";
    beforeAll(async () => {
      table = await createLeaseTable(dynamoClient(testEndpoint()));
      // The AWS SDK reads credentials from the process, as on a real host.
      vi.stubEnv("AWS_ACCESS_KEY_ID", "leasehold-test");
      vi.stubEnv("AWS_SECRET_ACCESS_KEY", "leasehold-test");
    });
    afterAll(() => vi.unstubAllEnvs());

    it.each(["AWS_REGION", "AWS_DEFAULT_REGION"])("%s", async (variable) => {
      const url = `dynamodb://${table}?endpoint=${encodeURIComponent(testEndpoint())}`;
      const started = await startWith({ LEASEHOLD_STORE: url, [variable]: "us-east-1" });
      const name = `jobs/${variable.toLowerCase()}`;
      expect((await call(started, "POST", `${leasePath(name)}/acquire`, { holder: "h", leaseMs: 5000 })).status).toBe(
        200,
      );
      await expect(start({ PORT: "0", LEASEHOLD_STORE: url })).rejects.toThrow(
        "LEASEHOLD_STORE: dynamodb:// needs ?region=... in the URL, or AWS_REGION (or AWS_DEFAULT_REGION)",
      );
    });
  });

  it("GOOGLE_CLOUD_PROJECT: the GCS project when the URL has none", async () => {
    const endpoint = process.env.GCS_ENDPOINT!;
    const bucket = `node-entry-${Date.now().toString(36)}`;
    await new Storage({ apiEndpoint: endpoint, projectId: "leasehold-test" }).createBucket(bucket);
    const started = await startWith({
      LEASEHOLD_STORE: `gcs://${bucket}/leases/?endpoint=${endpoint}`,
      GOOGLE_CLOUD_PROJECT: "leasehold-test",
    });
    expect(started.config.storeEnv.GOOGLE_CLOUD_PROJECT).toBe("leasehold-test");
    expect(
      (await call(started, "POST", `${leasePath("jobs/gcs")}/acquire`, { holder: "h", leaseMs: 5000 })).status,
    ).toBe(200);
  });
});

describe("npm start refuses to start, naming the variable", () => {
  it("refusals from start(env) change nothing: no store is opened, no file created", async () => {
    const path = join(dir, "never", "created.db");
    await expect(start({ PORT: "0", LEASEHOLD_DB: path, LEASEHOLD_MAX_SKEW_MS: "abc" })).rejects.toThrow(
      'LEASEHOLD_MAX_SKEW_MS: expected a whole number of milliseconds 0-60000, got "abc"',
    );
    expect(existsSync(path)).toBe(false);
  });

  // Real processes from here: the entry as `npm start` runs it, its exit status and stderr.
  const children = new Set<ChildProcess>();
  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  function spawnEntry(command: string[], env: Record<string, string>) {
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("LEASEHOLD_") && k !== "PORT" && k !== "HOST"),
    );
    const child = spawn(command[0]!, command.slice(1), {
      cwd: repo,
      env: { ...inherited, PORT: "0", LEASEHOLD_DB: file(), ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.add(child);
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    return { child, stderr: () => stderr, exited };
  }
  const entry = (env: Record<string, string>) =>
    spawnEntry([process.execPath, "--import", "tsx", join("src", "runtime", "node.ts")], env);

  // `npm start` builds first (prestart: the console bundle and tsc), which takes well over 20 s on
  // busy cores: these two tests wait as long as a build may take.
  const BUILD_MS = 150_000;

  it("LEASEHOLD_MAX_SKEW_MS=1s npm start", { timeout: BUILD_MS + 30_000 }, async () => {
    const npm = spawnEntry(["npm", "start", "--silent"], { LEASEHOLD_MAX_SKEW_MS: "1s" });
    expect(await npm.exited).toBe(1);
    expect(npm.stderr()).toContain(
      'leasehold: invalid server configuration: LEASEHOLD_MAX_SKEW_MS: expected a whole number of milliseconds 0-60000, got "1s"',
    );
  });

  it.each([
    [
      "LEASEHOLD_TOKENS with LEASEHOLD_INSECURE_NO_AUTH=1",
      { LEASEHOLD_TOKENS: TOKENS, LEASEHOLD_INSECURE_NO_AUTH: "1" },
      "LEASEHOLD_TOKENS: 1 token given together with LEASEHOLD_INSECURE_NO_AUTH=1",
    ],
    [
      "HOST=0.0.0.0 without tokens",
      { HOST: "0.0.0.0" },
      "LEASEHOLD_TOKENS: refusing to serve on 0.0.0.0 without tokens",
    ],
    ["PORT=80a", { PORT: "80a" }, 'PORT: expected a port number 0-65535, got "80a"'],
    ["LEASEHOLD_STORE with LEASEHOLD_DB", { LEASEHOLD_STORE: "memory:" }, "LEASEHOLD_DB: contradicts LEASEHOLD_STORE"],
  ])("%s", async (_, env, message) => {
    const refused = entry(env);
    expect(await refused.exited).toBe(1);
    expect(refused.stderr()).toContain(message);
    expect(refused.stderr().trim().split("\n")).toHaveLength(1);
  });

  it("a good configuration starts, prints one line with the real auth mode, and stops on SIGTERM", async () => {
    const server = entry({ LEASEHOLD_TOKENS: TOKENS, LEASEHOLD_MAX_SKEW_MS: "2000" });
    const line = await until("the start-up line", () =>
      server
        .stderr()
        .split("\n")
        .find((l) => l.includes("API on")),
    );
    expect(line).toMatch(
      /^leasehold: API on http:\/\/127\.0\.0\.1:\d+; store sqlite:\S+ \(LEASEHOLD_DB\); auth: 1 token \(ci: read\+write\+cas on "jobs\/"\); maxSkewMs 2000, watchPollMs 1000, heartbeatMs 15000, storeTimeoutMs 2000, inFlight 512, reservedInFlight 128, lateMs 1000$/,
    );
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    expect(server.stderr()).toContain("leasehold: SIGTERM: shutting down");
  });

  it("SIGTERM to the npm process the README's `npm start` starts drains the server and frees its port", {
    timeout: BUILD_MS + 30_000,
  }, async () => {
    // What a supervisor or a container runtime does: signal the process it started, which is npm.
    const npm = spawnEntry(["npm", "start", "--silent"], {});
    const line = await until(
      "the start-up line",
      () =>
        npm
          .stderr()
          .split("\n")
          .find((l) => l.includes("API on")),
      BUILD_MS,
    );
    const url = /API on (http:\/\/[^;]+);/.exec(line)?.[1];
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    npm.child.kill("SIGTERM");
    expect(await npm.exited).toBe(0);
    expect(npm.stderr()).toContain("leasehold: SIGTERM: shutting down");
    // The server itself stopped (it is not left behind as an orphan holding the port).
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});
