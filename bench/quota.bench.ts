/**
 * The cost of a create refused at `recordsPerPrefix` against a read (issue #30, item 4), through
 * the API in process (`app.request`: the server's work, no sockets) on a SQLite file holding
 * 2,000 or 10,000 records under one token's prefix, the bound set to exactly that many:
 * - before: the code at the issue's commit (BEFORE_COMMIT), whose refusal recounts the prefix by
 *   listing it (its source taken from git: bench/support/before.ts), on its own SQLite store (this
 *   code's reads 0.1.0's reserved metadata as typed fields, which the code before does not know);
 * - after: this code, whose count is kept in the store and believed for a minute once at the bound.
 * Reads and refused creates alternate call by call, so a change in machine load meets both.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import type { TokenScope } from "../src/api/auth.js";
import { instanceDigest } from "../src/api/instance.js";
import { quotaOwner, quotaRecord, quotaRecordName } from "../src/api/quota-records.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import type { LeaseStore } from "../src/lease.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";
import { beforeSources, ISSUE_30_COMMIT } from "./support/before.js";
import { benchRecord, machineLoad, QUICK, tempDir } from "./support/common.js";
import { median, quantile, type Table } from "./table.js";

const BEFORE_COMMIT = ISSUE_30_COMMIT;
const SIZES = [2000, 10_000];
const TOKEN: TokenScope = {
  name: "team",
  token: "team-token-0123456789abcdef",
  prefixes: ["team/"],
  verbs: ["read", "write"],
};
const INSTANCE = "bench-instance-0123456789";

interface App {
  request(path: string, init: RequestInit): Response | Promise<Response>;
}
type CreateApp = (options: {
  store: LeaseStore;
  auth: { tokens: TokenScope[] };
  limits: { recordsPerPrefix: number; createsPerMinute: number };
}) => App;

/** One code's app, SQLite store and counting wrapper. */
interface Code {
  createApp: CreateApp;
  sqlite: (path: string) => LeaseStore & { close(): Promise<void> };
  tracked: (store: LeaseStore) => TrackedStore;
  /** Keeps the instance digest in 0.1.0's metadata key, and no quota count. */
  legacy: boolean;
}

/** The code before, from git (undefined when this clone lacks the commit). */
async function beforeCode(): Promise<Code | undefined> {
  const src = beforeSources(BEFORE_COMMIT);
  if (!src) return undefined;
  const { createApp } = (await import(join(src, "api", "app.ts"))) as { createApp: CreateApp };
  const { SqliteStore: Before } = (await import(join(src, "stores", "sqlite.ts"))) as {
    SqliteStore: typeof SqliteStore;
  };
  const { TrackedStore: BeforeTracked } = (await import(join(src, "testkit", "tracked-store.ts"))) as {
    TrackedStore: typeof TrackedStore;
  };
  return {
    createApp,
    sqlite: (path) => new Before({ path }),
    tracked: (store) => new BeforeTracked(store),
    legacy: true,
  };
}

/**
 * A SQLite file with `n` records under team/, written past the store (one transaction): released
 * ones, and team/held, held by the bench's instance: its digest in the typed field `holderDigest`,
 * or (`legacy`) in 0.1.0's metadata key, where the code before keeps it.
 */
async function seed(path: string, n: number, legacy: boolean): Promise<void> {
  await new SqliteStore({ path }).close();
  const db = new Database(path);
  const insert = db.prepare("INSERT INTO leases (name, rev, record) VALUES (?, 1, ?)");
  const digest = await instanceDigest(INSTANCE);
  const base = { ...benchRecord("team/held"), holder: "h" };
  const held = legacy
    ? { ...base, metadata: { ...base.metadata, "leasehold.instance": digest } }
    : { ...base, holderDigest: digest };
  db.transaction(() => {
    for (let i = 0; i < n - 1; i++) {
      const name = `team/r${String(i).padStart(6, "0")}`;
      insert.run(name, JSON.stringify({ ...benchRecord(name), holder: null }));
    }
    insert.run("team/held", JSON.stringify(held));
  })();
  db.close();
}

/** Store calls of one request, as "get/put/list". */
async function storeCalls(tracked: TrackedStore, call: () => Promise<void>): Promise<string> {
  tracked.resetCounts();
  await call();
  const c = tracked.counts;
  return `${c.get}/${c.put}/${c.list}`;
}

interface Calls {
  read: () => Promise<void>;
  create: () => Promise<void>;
  renew: () => Promise<void>;
}

/** Reads, refused creates and renewals, alternating; per-call milliseconds of each. */
async function measure(calls: Calls, n: number): Promise<Record<keyof Calls, number[]>> {
  const kinds = ["read", "create", "renew"] as const;
  for (let i = 0; i < 3; i++) for (const k of kinds) await calls[k]();
  const out = { read: [] as number[], create: [] as number[], renew: [] as number[] };
  for (let i = 0; i < n; i++) {
    for (const k of kinds) {
      const t0 = performance.now();
      await calls[k]();
      out[k].push(performance.now() - t0);
    }
  }
  return out;
}

/** A read of one lease and a create past the bound, through `app`. */
function callsOf(app: App): Calls {
  const headers = { Authorization: `Bearer ${TOKEN.token}`, "Content-Type": "application/json" };
  const read = async () => {
    const res = await app.request("/v1/leases/team%2Fr000001", { headers });
    if (res.status !== 200) throw new Error(`GET answered ${res.status}`);
    await res.arrayBuffer();
  };
  let seq = 0;
  const create = async () => {
    const res = await app.request(`/v1/leases/team%2Fnew-${seq++}/acquire`, {
      method: "POST",
      headers,
      body: JSON.stringify({ holder: "h", instance: INSTANCE, leaseMs: 60_000 }),
    });
    if (res.status !== 429) throw new Error(`a create past the bound answered ${res.status}`);
    await res.arrayBuffer();
  };
  // The holder of team/held acquiring it again: a renewal, one read and one write.
  const renew = async () => {
    const res = await app.request("/v1/leases/team%2Fheld/acquire", {
      method: "POST",
      headers,
      body: JSON.stringify({ holder: "h", instance: INSTANCE, leaseMs: 60_000 }),
    });
    if (res.status !== 200) throw new Error(`a renewal answered ${res.status}`);
    await res.arrayBuffer();
  };
  return { read, create, renew };
}

export async function run(): Promise<Table[]> {
  const { createApp } = await import("../src/api/app.js");
  const after: Code = {
    createApp: createApp as unknown as CreateApp,
    sqlite: (path) => new SqliteStore({ path }),
    tracked: (store) => new TrackedStore(store),
    legacy: false,
  };
  const before = await beforeCode();
  const tmp = tempDir("quota");
  const rows: Table["rows"] = [];
  const loads: string[] = [];
  try {
    for (const n of SIZES) {
      for (const [label, code, calls] of [
        [`before (${BEFORE_COMMIT}): a recount by listing`, before, QUICK ? 10 : n > 5000 ? 50 : 100],
        ["after: a count kept in the store", after, QUICK ? 50 : 500],
      ] as const) {
        if (!code) {
          rows.push([n, label, "not measured: this clone lacks the commit", "", "", "", "", "", ""]);
          continue;
        }
        const path = tmp.path(`${label.slice(0, 5)}-${n}.db`);
        await seed(path, n, code.legacy);
        const sqlite = code.sqlite(path);
        const store = code.tracked(sqlite);
        if (!code.legacy) {
          // The count the store keeps for the token's prefix, at the bound as the seeded records are.
          const owner = await quotaOwner(TOKEN);
          const name = await quotaRecordName(owner, "team/");
          await store.put(quotaRecord(name, n, owner, "team/", Date.now()), null);
        }
        const app = code.createApp({
          store,
          auth: { tokens: [TOKEN] },
          limits: { recordsPerPrefix: n, createsPerMinute: 1_000_000 },
        });
        const requests = callsOf(app);
        const { read, create: refused, renew } = await measure(requests, calls);
        const readCalls = await storeCalls(store, requests.read);
        const refusedCalls = await storeCalls(store, requests.create);
        loads.push(machineLoad());
        rows.push([
          n,
          label,
          calls,
          `${median(read).toFixed(2)} / ${quantile(read, 0.99).toFixed(2)}`,
          `${median(refused).toFixed(2)} / ${quantile(refused, 0.99).toFixed(2)}`,
          `${median(renew).toFixed(2)} / ${quantile(renew, 0.99).toFixed(2)}`,
          `${(median(refused) / median(read)).toFixed(1)}x`,
          `${readCalls} / ${refusedCalls}`,
          loads.at(-1)!,
        ]);
        await sqlite.close();
      }
    }
  } finally {
    tmp.remove();
  }
  return [
    {
      title: "A create refused at recordsPerPrefix against a read (SQLite, in process)",
      note: `Per request through createApp's app.request (no sockets): GET of a lease, an acquire of a new name past the bound, and the holder's acquire of its own lease (a renewal: one read, one write), alternating; the prefix holds exactly the bound in records. Before: the code at ${BEFORE_COMMIT}. ms, median / p99.`,
      columns: [
        "records",
        "code",
        "calls",
        "read ms",
        "refused create ms",
        "renewal ms",
        "refused / read",
        "store get/put/list: read / refused",
        "load",
      ],
      rows,
    },
  ];
}
