/**
 * The other `leasehold` commands and the error contract, through the real binary: status (of leases
 * and of a sharded group), watch,
 * release, serve, usage errors (exit 2) and bad store URLs. `serve` reads the same variables as
 * `npm start` (src/api/config/policy.ts): each one is checked here through the binary, with the flags
 * that override them.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Storage } from "@google-cloud/storage";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { LeaseholdClient } from "../src/http/client.js";
import { type LeaseRecord, newWriteId, type Stored } from "../src/lease.js";
import { serve } from "../src/runtime/node.js";
import { TEST_INSTANCE } from "./support/api-server.js";
import { type Cli, CliProcesses, repo, until } from "./support/cli-processes.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";

const root = mkdtempSync(join(tmpdir(), "leasehold-cli-cmd-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let store: SqliteStore;
let url: string;
let n = 0;
/** For the sequential describes: a fresh SQLite file per test, every child killed after it. */
const procs = new CliProcesses();
function freshStorePerTest(): void {
  beforeEach(() => {
    const path = join(root, `${n++}.db`);
    url = `sqlite:${path}`;
    store = new SqliteStore({ path });
  });
  afterEach(async () => {
    await procs.killAll();
    await store.close();
  });
}

function lease(name: string, patch: Partial<LeaseRecord> = {}): LeaseRecord {
  const now = Date.now();
  return {
    name,
    holder: "alice",
    term: 3,
    leaseMs: 60_000,
    acquiredAt: now,
    renewedAt: now,
    metadata: {},
    writeId: newWriteId(),
    ...patch,
  };
}

// Independent processes that fail before touching a store: run them side by side.
describe.concurrent("usage errors: one line on stderr, exit 2", () => {
  // Concurrent tests: each kill-all would hit the others' children, so clean up once at the end.
  const quick = new CliProcesses();
  const url = `sqlite:${join(root, "usage.db")}`;
  afterAll(() => quick.killAll());

  it.each([
    [[], "Usage: leasehold"],
    [["frobnicate"], "unknown command 'frobnicate'"],
    [["run", "--", "true"], "required option '--lease <name>' not specified"],
    [["run", "--lease", "a"], "missing required argument 'command'"],
    [["run", "--lease", "a", "--lease-ms", "soon", "--", "true"], "expected a whole number of milliseconds"],
    [["status", "--bogus"], "unknown option '--bogus'"],
    [["release", "a", "--holder", "x"], "--term: expected --holder and --term"],
    [["release", "a", "--holder", "x", "--term", "-1"], "expected a whole number"],
  ])("%j", async (args, message) => {
    const result = await quick.run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stdout).toBe("");
  });

  it("option values the elector rejects are named by their flag", async () => {
    const result = await quick.run([
      "run",
      "--lease",
      "a",
      "--store",
      url,
      "--lease-ms",
      "1000",
      "--renew-ms",
      "2000",
      "--",
      "true",
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("invalid run options: --renew-ms: expected less than leaseMs - safetyMs");
  });

  it("a follower poll of 0 ms is named by its flag, --poll-ms", async () => {
    const result = await quick.run(["run", "--lease", "a", "--store", url, "--poll-ms", "0", "--", "true"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("invalid run options: --poll-ms: expected more than 0 ms");
  });

  it("a renewal faster than the store can take is named by its flag (GCS: one write per second)", async () => {
    const gcs = `gcs://cli-rate-${Date.now().toString(36)}/leases/?endpoint=${process.env.GCS_ENDPOINT}&project=p`;
    const result = await quick.run([
      "run",
      "--lease",
      "a",
      "--store",
      gcs,
      "--lease-ms",
      "2000",
      "--renew-ms",
      "500",
      "--",
      "true",
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--renew-ms: expected at least 1000 ms, got 500");
  });

  it("an invalid lease name", async () => {
    const result = await quick.run(["run", "--lease", "Not A Name", "--store", url, "--", "true"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^leasehold: invalid elector options|^leasehold: invalid run options: --lease: expected/,
    );
  });

  it("a bad store URL names the part and lists the accepted forms", async () => {
    const result = await quick.run(["status", "--store", "dynamodb://leases?region=eu-west-1&colour=red"]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain('invalid store URL: query parameter "colour": not understood by dynamodb: URLs');
    expect(result.stderr).toContain("sqlite:PATH");
    expect(result.stderr).toContain("gcs://BUCKET/PREFIX");
  });

  it("the store URL also comes from LEASEHOLD_STORE", async () => {
    const result = await quick.run(["status"], { LEASEHOLD_STORE: "redis://localhost" });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown scheme "redis:"');
  });
});

describe("status", () => {
  freshStorePerTest();
  beforeEach(async () => {
    await store.put(lease("jobs/held", { holder: "alice", term: 3 }), null);
    await store.put(lease("jobs/free", { holder: null, term: 7 }), null);
    await store.put(
      lease("jobs/stale", { holder: "bob", term: 2, leaseMs: 1000, renewedAt: Date.now() - 10_000 }),
      null,
    );
    await store.put(lease("other/x"), null);
  });

  it("--json: every lease under the prefix with its state", async () => {
    const result = await procs.run(["status", "jobs/", "--store", url, "--json"]);
    expect(result.code).toBe(0);
    const views = JSON.parse(result.stdout) as Array<Record<string, unknown>>;
    expect(views.map((v) => [v.name, v.holder, v.term, v.state])).toEqual([
      ["jobs/free", null, 7, "released"],
      ["jobs/held", "alice", 3, "held"],
      ["jobs/stale", "bob", 2, "expired"],
    ]);
    const held = views[1]!;
    expect(held.expiresInMs).toBeGreaterThan(0);
    expect(held.expiresInMs).toBeLessThanOrEqual(60_000);
    expect(views[0]!.expiresInMs).toBeNull();
    expect(held.expiresAt).toBe((held.renewedAt as number) + (held.leaseMs as number));
  });

  it("a table by default", async () => {
    const result = await procs.run(["status", "--store", url]);
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^LEASE\s+HOLDER\s+TERM\s+EXPIRES IN$/);
    expect(lines).toHaveLength(5);
    expect(lines.find((l) => l.startsWith("jobs/free"))).toMatch(/-\s+7\s+released$/);
    expect(lines.find((l) => l.startsWith("jobs/stale"))).toMatch(/bob\s+2\s+expired \d+(\.\d)?s ago$/);
    expect(lines.find((l) => l.startsWith("jobs/held"))).toMatch(/alice\s+3\s+\d+(\.\d)?s$/);
  });

  it("an invalid prefix is a usage error", async () => {
    const result = await procs.run(["status", "Jobs", "--store", url]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("invalid lease prefix");
  });
});

describe("status --group", () => {
  freshStorePerTest();
  const group = "adapters/billing";

  /** Three remote members through the API on the same SQLite file: a holds all 16, b joined, c left. */
  beforeEach(async () => {
    const server = await serve({ store, port: 0 });
    try {
      const api = new LeaseholdClient({ baseUrl: server.url });
      const beat = (member: string, instance: string) =>
        api.heartbeat(group, member, { instance, leaseMs: 60_000, buckets: 16 });
      await beat("a", "instance-a-0000000000001");
      const c = await beat("c", "instance-c-0000000000001");
      await api.leave(group, "c", { instance: "instance-c-0000000000001", session: c.session });
      await beat("b", "instance-b-0000000000001");
    } finally {
      await server.close();
    }
  });

  it("--json: the count, each member's session and load, each bucket's owner, term and target", async () => {
    const result = await procs.run(["status", "--group", group, "--store", url, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const status = JSON.parse(result.stdout);
    expect(status).toMatchObject({
      group,
      config: { buckets: 16, epoch: 1, previous: 0 },
      unowned: 0,
      balanced: false,
    });
    expect(status.members.map((m: Record<string, unknown>) => [m.id, m.session, m.state, m.held, m.target])).toEqual([
      ["a", 1, "live", 16, 8],
      ["b", 1, "live", 0, 8],
      ["c", 1, "left", 0, 0],
    ]);
    expect(status.buckets).toHaveLength(16);
    for (const b of status.buckets) expect(b).toMatchObject({ owner: "a", term: 1, state: "held" });
    const targets = status.buckets.map((b: { target: string }) => b.target);
    expect(targets.filter((t: string) => t === "a")).toHaveLength(8);
    expect(targets.filter((t: string) => t === "b")).toHaveLength(8);
  });

  it("a table by default: a summary, the members, the buckets", async () => {
    const result = await procs.run(["status", "--group", group, "--store", url]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe(`group ${group}: 16 buckets (epoch 1), 2 live members, 0 unowned, not balanced`);
    expect(lines[1]).toMatch(/^MEMBER\s+SESSION\s+STATE\s+HELD\s+TARGET\s+WANTS\s+EXPIRES IN$/);
    expect(lines[2]).toMatch(/^a\s+1\s+live\s+16\s+8\s+-\s+\d+(\.\d)?s$/);
    expect(lines[4]).toMatch(/^c\s+1\s+left\s+0\s+-\s+-\s+-$/);
    expect(lines[5]).toBe("");
    expect(lines[6]).toMatch(/^BUCKET\s+OWNER\s+TERM\s+STATE\s+TARGET$/);
    expect(lines.slice(7)).toHaveLength(16);
    expect(lines[7]).toMatch(/^0\s+a\s+1\s+held\s+[ab]$/);
  });

  it("a group that does not exist is exit 1; a prefix beside --group, or a bad name, exit 2", async () => {
    const missing = await procs.run(["status", "--group", "adapters/none", "--store", url]);
    expect(missing).toMatchObject({ code: 1, stdout: "" });
    expect(missing.stderr).toBe(
      'leasehold: no group "adapters/none": its config record "adapters/none/_config" does not exist\n',
    );
    const both = await procs.run(["status", "jobs/", "--group", group, "--store", url]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("give a prefix or --group, not both");
    const bad = await procs.run(["status", "--group", "Adapters", "--store", url]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--group");
  });
});

describe("release", () => {
  freshStorePerTest();
  let held: Stored;
  beforeEach(async () => {
    held = await store.put(lease("jobs/held", { holder: "alice", term: 3 }), null);
  });

  it("with the wrong term: refused, nothing changed", async () => {
    const result = await procs.run(["release", "jobs/held", "--holder", "alice", "--term", "2", "--store", url]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'leasehold: lease "jobs/held" is held by alice in term 3, not by alice in term 2; nothing changed\n',
    );
    expect(await store.get("jobs/held")).toEqual(held);
  });

  it("with the wrong holder: refused, nothing changed", async () => {
    const result = await procs.run(["release", "jobs/held", "--holder", "mallory", "--term", "3", "--store", url]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("not by mallory in term 3");
    expect(await store.get("jobs/held")).toEqual(held);
  });

  it("a lease that does not exist", async () => {
    const result = await procs.run(["release", "jobs/none", "--holder", "a", "--term", "1", "--store", url]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('lease "jobs/none" does not exist');
  });

  it("with holder and term matching: holder null, term kept; a second release is a no-op", async () => {
    const result = await procs.run([
      "release",
      "jobs/held",
      "--holder",
      "alice",
      "--term",
      "3",
      "--store",
      url,
      "--json",
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ released: true, name: "jobs/held", holder: null, term: 3 });
    expect((await store.get("jobs/held"))?.record).toMatchObject({ holder: null, term: 3 });
    const again = await procs.run(["release", "jobs/held", "--holder", "alice", "--term", "3", "--store", url]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain("already released");
  });
});

describe("watch", () => {
  freshStorePerTest();
  it("one line per change, from the current record on (polling a store without push)", async () => {
    const first = await store.put(lease("jobs/w", { holder: "alice", term: 1 }), null);
    const cli = procs.start(["watch", "jobs/w", "--store", url, "--json"]);
    const events = () =>
      cli
        .stdout()
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as { event: string; lease: { holder: string | null; term: number } | null });
    await until("the current record", () => events().length === 1);
    const renewed = await store.put({ ...first.record, renewedAt: Date.now(), writeId: newWriteId() }, first.revision);
    await until("the renewal", () => events().length === 2);
    const released = await store.put({ ...renewed.record, holder: null, writeId: newWriteId() }, renewed.revision);
    await until("the release", () => events().length === 3);
    await store.put({ ...released.record, holder: "bob", term: 2, writeId: newWriteId() }, released.revision);
    await until("the new holder", () => events().length === 4);
    expect(events().map((e) => [e.event, e.lease?.holder, e.lease?.term])).toEqual([
      ["current", "alice", 1],
      ["renewed", "alice", 1],
      ["released", null, 1],
      ["acquired", "bob", 2],
    ]);
    cli.child.kill("SIGINT");
    expect((await cli.exited).code).toBe(0);
  });

  it("human lines, and an expiry noticed locally", async () => {
    await store.put(lease("jobs/e", { holder: "carol", term: 4, leaseMs: 500 }), null);
    const cli = procs.start(["watch", "jobs/e", "--store", url]);
    const lines = () => cli.stdout().trim().split("\n");
    await until("the expiry line", () => lines().length === 2);
    const [current, expired] = lines();
    // The first line may already show it expired: the lease is short and the CLI takes a moment to start.
    expect(current).toMatch(/^\S+Z {2}current {3}jobs\/e {2}holder=carol term=4 {2}(expires in \d|\(expired\))/);
    expect(expired).toMatch(/^\S+Z {2}expired {3}jobs\/e {2}holder=carol term=4 {2}\(expired\)$/);
  });
});

const nodeRuntime = existsSync(join(repo, "src", "runtime", "node.ts"));
describe.runIf(nodeRuntime)("serve", () => {
  freshStorePerTest();
  it("serves the API; status and run work against it through an http:// store URL", async () => {
    await store.put(lease("jobs/api", { holder: "dave", term: 5 }), null);
    const server = procs.start(["serve", "--port", "0", "--store", url, "--json"]);
    const { url: api } = await until("the listening address", () => {
      const line = server.stdout().split("\n")[0];
      return line ? (JSON.parse(line) as { url: string }) : undefined;
    });
    expect(api).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const status = await procs.run(["status", "jobs/", "--store", api, "--json"]);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject([{ name: "jobs/api", holder: "dave", term: 5 }]);

    const run = await procs.run(["run", "--lease", "jobs/remote", "--store", api, "--lease-ms", "3000", "--", "true"]);
    expect(run.code).toBe(0);
    expect((await store.get("jobs/remote"))?.record).toMatchObject({ holder: null, term: 1 });

    server.child.kill("SIGTERM");
    expect((await server.exited).code).toBe(0);
  });
});

const SERVE_TOKEN = "serve-env-token-0123456789";
const SERVE_TOKENS = JSON.stringify([
  { name: "ci", token: SERVE_TOKEN, prefixes: ["jobs/"], verbs: ["read", "write", "cas"] },
]);
/** Every server variable unset unless a test sets it: the parent's environment must not leak in. */
const NO_SERVER_VARIABLES = {
  PORT: "",
  HOST: "",
  LEASEHOLD_DB: "",
  LEASEHOLD_TOKENS: "",
  LEASEHOLD_INSECURE_NO_AUTH: "",
  LEASEHOLD_MAX_SKEW_MS: "",
  LEASEHOLD_WATCH_POLL_MS: "",
  LEASEHOLD_HEARTBEAT_MS: "",
  LEASEHOLD_TOKEN: "",
  AWS_REGION: "",
  AWS_DEFAULT_REGION: "",
};

describe.runIf(nodeRuntime).concurrent("serve refuses a bad configuration: one line naming it, exit 2", () => {
  const quick = new CliProcesses(NO_SERVER_VARIABLES);
  afterAll(() => quick.killAll());
  const db = () => join(root, `refused-${n++}.db`);

  it.each([
    [
      "LEASEHOLD_MAX_SKEW_MS=abc",
      [],
      { LEASEHOLD_MAX_SKEW_MS: "abc" },
      'LEASEHOLD_MAX_SKEW_MS: expected a whole number of milliseconds 0-60000, got "abc"',
    ],
    [
      "LEASEHOLD_TOKENS with LEASEHOLD_INSECURE_NO_AUTH=1",
      [],
      { LEASEHOLD_TOKENS: SERVE_TOKENS, LEASEHOLD_INSECURE_NO_AUTH: "1" },
      "LEASEHOLD_TOKENS: 1 token given together with LEASEHOLD_INSECURE_NO_AUTH=1: tokens ask for auth, the flag turns it off",
    ],
    [
      "LEASEHOLD_TOKENS with --insecure-no-auth",
      ["--insecure-no-auth"],
      { LEASEHOLD_TOKENS: SERVE_TOKENS },
      "LEASEHOLD_TOKENS: 1 token given together with --insecure-no-auth",
    ],
    [
      "HOST=0.0.0.0 without tokens",
      [],
      { HOST: "0.0.0.0" },
      "LEASEHOLD_TOKENS: refusing to serve on 0.0.0.0 without tokens: set LEASEHOLD_TOKENS, or --insecure-no-auth (or LEASEHOLD_INSECURE_NO_AUTH=1)",
    ],
    [
      "LEASEHOLD_STORE with LEASEHOLD_DB",
      [],
      { LEASEHOLD_STORE: "memory:" },
      "LEASEHOLD_DB: contradicts LEASEHOLD_STORE",
    ],
    ["PORT=http", [], { PORT: "http" }, 'PORT: expected a port number 0-65535, got "http"'],
    ["--host beyond loopback without tokens", ["--host", "0.0.0.0"], {}, "refusing to serve on 0.0.0.0 without tokens"],
  ] as const)("%s", async (_, args, env, message) => {
    const result = await quick.run(["serve", ...args], { PORT: "0", LEASEHOLD_DB: db(), ...env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^leasehold: invalid server configuration: /);
    expect(result.stderr).toContain(message);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stdout).toBe("");
  });
});

describe.runIf(nodeRuntime)("serve reads the variables npm start reads", () => {
  const servers = new CliProcesses(NO_SERVER_VARIABLES);
  afterEach(() => servers.killAll());
  const db = () => join(root, `serve-${n++}.db`);

  /** Starts `leasehold serve --json` and waits for its address and its start-up line. */
  async function startServe(
    args: string[],
    env: Record<string, string>,
  ): Promise<{ cli: Cli; url: string; line: string }> {
    const cli = servers.start(["serve", "--json", ...args], env);
    const { url } = await until("the listening address", () => {
      const first = cli.stdout().split("\n")[0];
      return first ? (JSON.parse(first) as { url: string }) : undefined;
    });
    const line = await until("the start-up line", () =>
      cli
        .stderr()
        .split("\n")
        .find((l) => l.includes(" API on ")),
    );
    return { cli, url, line };
  }
  async function stop(cli: Cli): Promise<void> {
    cli.child.kill("SIGTERM");
    expect((await cli.exited).code).toBe(0);
  }
  const acquire = (url: string, name: string, token?: string) =>
    fetch(`${url}/v1/leases/${encodeURIComponent(name)}/acquire`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ holder: "h", instance: TEST_INSTANCE, leaseMs: 5000 }),
    });

  it("PORT, LEASEHOLD_DB, LEASEHOLD_TOKENS, LEASEHOLD_MAX_SKEW_MS, LEASEHOLD_WATCH_POLL_MS, LEASEHOLD_HEARTBEAT_MS", async () => {
    const path = db();
    const { cli, url, line } = await startServe([], {
      PORT: "0",
      LEASEHOLD_DB: path,
      LEASEHOLD_TOKENS: SERVE_TOKENS,
      LEASEHOLD_MAX_SKEW_MS: "5000",
      LEASEHOLD_WATCH_POLL_MS: "300",
      LEASEHOLD_HEARTBEAT_MS: "200",
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(url).not.toContain(":8787");
    expect(line).toBe(
      `leasehold: API on ${url}; store sqlite:${path} (LEASEHOLD_DB); auth: 1 token (ci: read+write+cas on "jobs/"); maxSkewMs 5000, watchPollMs 300, heartbeatMs 200, storeTimeoutMs 2000, inFlight 512, reservedInFlight 128, lateMs 1000`,
    );
    expect(cli.stderr()).not.toContain(SERVE_TOKEN);
    // LEASEHOLD_TOKENS: a token is required, and the lease lands in LEASEHOLD_DB.
    expect((await acquire(url, "jobs/a")).status).toBe(401);
    expect((await acquire(url, "jobs/a", SERVE_TOKEN)).status).toBe(200);
    const direct = new SqliteStore({ path });
    expect((await direct.get("jobs/a"))?.record).toMatchObject({ holder: "h" });
    await direct.close();
    // LEASEHOLD_MAX_SKEW_MS: a writer's acquiredAt 4 s ahead passes the 5 s bound (the default 1 s refuses it).
    const put = await fetch(`${url}/v1/leases/${encodeURIComponent("jobs/ahead")}`, {
      method: "PUT",
      headers: {
        "content-type": "application/json",
        "if-none-match": "*",
        "leasehold-instance": TEST_INSTANCE,
        authorization: `Bearer ${SERVE_TOKEN}`,
      },
      body: JSON.stringify({
        holder: "h",
        term: 1,
        leaseMs: 5000,
        metadata: {},
        writeId: "w1",
        acquiredAt: Date.now() + 4000,
      }),
    });
    expect(put.status).toBe(201);
    await stop(cli);
  });

  it("HOST with LEASEHOLD_INSECURE_NO_AUTH=1: no auth beyond loopback, and the line says why", async () => {
    const { cli, url, line } = await startServe([], {
      PORT: "0",
      LEASEHOLD_DB: db(),
      HOST: "0.0.0.0",
      LEASEHOLD_INSECURE_NO_AUTH: "1",
    });
    expect(url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    expect(line).toContain("auth: none, because of LEASEHOLD_INSECURE_NO_AUTH=1");
    expect((await acquire(url.replace("0.0.0.0", "127.0.0.1"), "jobs/open")).status).toBe(200);
    await stop(cli);
  });

  it("the flags override the variables: --port, --host, --store, --insecure-no-auth", async () => {
    const flagged = db();
    const { cli, url, line } = await startServe(
      ["--port", "0", "--host", "127.0.0.1", "--store", `sqlite:${flagged}`, "--insecure-no-auth"],
      { PORT: "1", HOST: "0.0.0.0", LEASEHOLD_STORE: `sqlite:${db()}`, LEASEHOLD_INSECURE_NO_AUTH: "0" },
    );
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(line).toContain(`store sqlite:${flagged} (--store); auth: none, because of --insecure-no-auth`);
    await stop(cli);
  });

  it("LEASEHOLD_STORE with LEASEHOLD_TOKEN: an http(s):// store and the token it is sent", async () => {
    const backing = new MemoryStore();
    const api = await serve({ store: backing, port: 0, tokens: JSON.parse(SERVE_TOKENS) });
    try {
      const { cli, url, line } = await startServe([], {
        PORT: "0",
        LEASEHOLD_STORE: `${api.url}/`,
        LEASEHOLD_TOKEN: SERVE_TOKEN,
      });
      expect(line).toContain(`store ${api.url}/;`);
      const proxiedAcquire = await acquire(url, "jobs/proxied");
      expect(proxiedAcquire.status, await proxiedAcquire.clone().text()).toBe(200);
      expect((await backing.get("jobs/proxied"))?.record).toMatchObject({ holder: "h" });
      await stop(cli);
    } finally {
      await api.close();
    }
  });

  it.each(["AWS_REGION", "AWS_DEFAULT_REGION"])("%s: the DynamoDB region when the URL has none", async (variable) => {
    const table = await createLeaseTable(dynamoClient(testEndpoint()));
    const { cli, url } = await startServe([], {
      PORT: "0",
      LEASEHOLD_STORE: `dynamodb://${table}?endpoint=${encodeURIComponent(testEndpoint())}`,
      [variable]: "us-east-1",
      AWS_ACCESS_KEY_ID: "leasehold-test",
      AWS_SECRET_ACCESS_KEY: "leasehold-test",
    });
    expect((await acquire(url, "jobs/dynamo")).status).toBe(200);
    await stop(cli);
  });

  it("GOOGLE_CLOUD_PROJECT: the GCS project when the URL has none", async () => {
    const endpoint = process.env.GCS_ENDPOINT!;
    const bucket = `serve-env-${Date.now().toString(36)}`;
    await new Storage({ apiEndpoint: endpoint, projectId: "leasehold-test" }).createBucket(bucket);
    const { cli, url } = await startServe([], {
      PORT: "0",
      LEASEHOLD_STORE: `gcs://${bucket}/leases/?endpoint=${endpoint}`,
      GOOGLE_CLOUD_PROJECT: "leasehold-test",
    });
    expect((await acquire(url, "jobs/gcs")).status).toBe(200);
    await stop(cli);
  });
});
