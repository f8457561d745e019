/**
 * Graceful handover at the physical floor, one pair at a time (issue #22 item 5): the API server
 * (src/runtime/node.ts `serve` on SQLite) in its own process, a leader and a follower (Electors on
 * HttpStore, each its own client) in this one, one handover after another, and beside it etcd's
 * election (etcd in its own process, two etcd3 clients here), also one at a time, in the same run.
 *
 * Per-hop breakdown, every stamp on CLOCK_MONOTONIC (process.hrtime here, process.hrtime in the
 * server process: one clock for the machine):
 *   release sent (the leader's store.put) → server write start (the API calls its store) →
 *   event written (the store answered) → release acknowledged (the leader's put resolved) and, in
 *   parallel, event received (the follower's watch stream yields the release) → CAS sent (the
 *   follower's put) → server CAS start → CAS written → CAS acknowledged → elected (the event).
 * Client stamps come from store wrappers around each Elector's HttpStore (they add a timestamp and
 * nothing else); server stamps from bench/support/timed-api-process.ts, matched by writeId.
 *
 * Variants, each labelled with its path to the store:
 * - `Elector (default: process session)`: `new Elector` as the README writes it, which since
 *   issue 31 rides on the process session: the follower registers, a graceful stop hands over in
 *   one write (the hand-over hops below).
 * - `Elector (session: false), HTTP API → SQLite`: an Elector renewing its own record (pollMs
 *   default 1000, push via the API's watch); graceful stop = release (holder null), the follower's
 *   CAS takes it. Every hop above. On MemoryStore: the same two writes with no network or disk
 *   (the floor of the release + CAS shape). No server hops.
 * - `bound lease, direct hand-over`: two process sessions (`openSession`), the follower
 *   registered as successor; a graceful stop hands the lease over in one write (holder = the
 *   successor, term + 1) and the successor leads on the push, without a write. Over the HTTP API
 *   (src/api/succession.ts) and in process on MemoryStore. Hops: the hand-over write (and the server's part of it, over the API) and the push.
 * Every variant also gets `stop() called → elected`: the whole graceful stop as a caller sees it
 * (it includes the bound leader's pre-reads of the lease and the successor's session).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { HttpStore } from "../src/backends/http/store.js";
import { MemoryStore } from "../src/backends/memory/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import type { BoundElector } from "../src/bound/bound-elector.js";
import { openSession } from "../src/bound/session.js";
import { Elector } from "../src/leader/elector.js";
import type { CallOptions, LeaseRecord, LeaseStore, Revision, Stored } from "../src/lease.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";
import { machineLoad, QUICK, randomBetween, sleep, tempDir, within } from "./support/common.js";
import { etcdHandoverHops } from "./support/etcd-handover.js";
import { startEtcd } from "./support/etcd-server.js";
import { median, quantile, type Table } from "./table.js";

const LEASE_MS = 15_000;
const RUNS = QUICK ? 8 : 40;
const ns = () => process.hrtime.bigint();

type StorePath = "api" | "memory" | "sqlite";

interface Variant {
  label: string;
  /** `elector`: `new Elector` as the README writes it (since issue 31 on the process session);
   * `renewing`: an Elector renewing its own record (`session: false`), release then CAS;
   * `bound`: `openSession` + `session.elector`, named sessions. */
  kind: "elector" | "renewing" | "bound";
  store: StorePath;
}

const VARIANTS: Variant[] = [
  { label: "Elector (default: process session), HTTP API → SQLite", kind: "elector", store: "api" },
  {
    label: "Elector (default: process session), SQLite directly (push by data_version)",
    kind: "elector",
    store: "sqlite",
  },
  { label: "Elector (session: false), HTTP API → SQLite", kind: "renewing", store: "api" },
  { label: "Elector (session: false), in-process MemoryStore", kind: "renewing", store: "memory" },
  { label: "Elector (session: false), SQLite directly (push by data_version)", kind: "renewing", store: "sqlite" },
  { label: "bound lease (openSession), HTTP API → SQLite", kind: "bound", store: "api" },
  { label: "bound lease (openSession), in-process MemoryStore", kind: "bound", store: "memory" },
  { label: "bound lease (openSession), SQLite directly (push by data_version)", kind: "bound", store: "sqlite" },
];

/** One candidate: its stamped store, its elector and how it is closed after the handover. */
interface Candidate {
  store: Stamps;
  elector: Elector | BoundElector;
  close(): Promise<void>;
}

/** Write stamps: when a put was sent and answered, by writeId; and when watch events arrived. */
class Stamps extends StoreWrapper {
  readonly sent = new Map<string, { at: bigint; acked?: bigint; holder: string | null }>();
  readonly pushed: Array<{ at: bigint; holder: string | null }> = [];
  override async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const stamp: { at: bigint; acked?: bigint; holder: string | null } = { at: ns(), holder: next.holder };
    this.sent.set(next.writeId, stamp);
    const stored = await super.put(next, expected, options);
    stamp.acked = ns();
    return stored;
  }
  protected override async *watchOf(name: string, signal: AbortSignal): AsyncIterable<Stored | null> {
    for await (const stored of super.watchOf(name, signal)) {
      this.pushed.push({ at: ns(), holder: stored?.record.holder ?? null });
      yield stored;
    }
  }
}

interface ServerWrite {
  start: bigint;
  end: bigint;
}

const HOPS = [
  "release sent → server write start",
  "server write (release)",
  "written → release acknowledged",
  "written → event received (push)",
  "event received → CAS sent",
  "CAS sent → server write start",
  "server write (CAS)",
  "CAS written → CAS acknowledged",
  "CAS acknowledged → elected",
  "release sent → acknowledged (no server)",
  "release sent → event received (push, no server)",
  "CAS sent → acknowledged (no server)",
  "release sent → elected (total)",
  "hand-over sent → server write start",
  "server write (hand-over)",
  "hand-over written → event received (push)",
  "hand-over write sent → acknowledged",
  "hand-over write sent → event received (push)",
  "event received → elected",
  "hand-over write sent → elected (total)",
  "stop() called → elected",
] as const;
type Hop = (typeof HOPS)[number];

export async function run(): Promise<Table[]> {
  const dir = tempDir("handover-hops");
  const server = await startTimedApi(dir.path("api.db"));
  const rows: Array<Array<string | number>> = [];
  const anomalies: string[] = [];
  try {
    for (const v of VARIANTS) {
      const hops = new Map<Hop, number[]>(HOPS.map((h) => [h, []]));
      const memory = new MemoryStore();
      // SQLite directly: each candidate its own store (its own connections) on one file, as two
      // processes on a host would have; it hears the other's writes by its watch.
      const sqlite: SqliteStore[] = [];
      const openSqlite = () => {
        const store = new SqliteStore({ path: dir.path("direct.db") });
        sqlite.push(store);
        return store;
      };
      for (let i = 0; i < RUNS; i++) {
        const base = () =>
          v.store === "api" ? new HttpStore({ baseUrl: server.url }) : v.store === "sqlite" ? openSqlite() : memory;
        const sample = await oneHandover(v, base, server, `hops/${i}-${Date.now().toString(36)}`);
        if (typeof sample === "string") anomalies.push(sample);
        else for (const [hop, value] of sample) if (value !== undefined) hops.get(hop)?.push(value);
      }
      for (const store of sqlite.splice(0)) await store.close();
      // Hops a variant does not have are left out rather than printed empty.
      for (const hop of HOPS) {
        const values = hops.get(hop) ?? [];
        if (values.length > 0) rows.push(hopRow(v.label, hop, values));
      }
    }
  } finally {
    server.stop();
    dir.remove();
  }
  rows.push(...(await etcdRows()));
  return [
    {
      title: "Graceful handover, one pair at a time, per hop",
      note:
        `leaseMs ${LEASE_MS} (defaults otherwise); ${RUNS} handovers one after another, the follower watching for ` +
        `1-1.5 s before each. HTTP API: serve() on SQLite (group commit) in its own process, leader and ` +
        `follower Electors on their own HttpStore in the bench process; stamps on CLOCK_MONOTONIC in both processes ` +
        `(client store wrappers; the server's store wrapper, matched by writeId). In-process MemoryStore: one store ` +
        `in the bench process (no network, no disk), each candidate its own stamping wrapper; SQLite directly: each ` +
        `candidate its own SqliteStore on one file (its own connections, fsync per write), told of the other's ` +
        `writes by the store's watch (PRAGMA data_version every 25 ms); bound lease: each ` +
        `candidate its own session (openSession), the follower registered as successor, the leader's stop() hands ` +
        `over in one write (over the API: the server's hops stamped as for the Elector). etcd: its own process, two etcd3 ` +
        `clients here, resign() → the waiting campaign's elected event, stamped on the client side. ms. ` +
        `${machineLoad()} at the end.` +
        (anomalies.length > 0 ? ` Anomalies: ${anomalies.join("; ")}.` : ""),
      columns: ["elector", "hop", "runs", "median ms", "p99 ms", "max ms"],
      rows,
    },
  ];
}

function hopRow(label: string, hop: string, values: number[]): Array<string | number> {
  if (values.length === 0) return [label, hop, 0, "-", "-", "-"];
  return [label, hop, values.length, median(values), quantile(values, 0.99), Math.max(...values)];
}

async function oneHandover(
  v: Variant,
  base: () => LeaseStore,
  server: TimedApi,
  name: string,
): Promise<Map<Hop, number | undefined> | string> {
  const make = (identity: string): Candidate => {
    const store = new Stamps(base());
    if (v.kind !== "bound") {
      const session = v.kind === "elector";
      const elector = new Elector({ store, name, identity, leaseMs: LEASE_MS, session });
      return { store, elector, close: () => elector.stop({ release: true }) };
    }
    const session = openSession({
      store,
      identity,
      name: `_sessions/${identity}-${name.replaceAll("/", "-")}`,
      leaseMs: LEASE_MS,
    });
    const elector = session.elector({ name });
    return { store, elector, close: () => session.close() };
  };
  const a = make("a");
  const b = make("b");
  try {
    const aElected = new Promise<true>((resolve) => a.elector.on("elected", () => resolve(true)));
    a.elector.start();
    if ((await within(aElected, 10_000)) === undefined) return `${name}: A never led`;
    const bElected = new Promise<bigint>((resolve) => b.elector.on("elected", () => resolve(ns())));
    b.elector.start();
    await sleep(randomBetween(1000, 1500)); // B has read the lease, opened its watch (and registered)
    const pushedBefore = b.store.pushed.length;
    const sentBefore = new Set(a.store.sent.keys());
    const stopCalled = ns();
    await a.elector.stop({ release: true });
    const elected = await within(bElected, 3 * LEASE_MS);
    if (elected === undefined) return `${name}: B did not lead within 3 × leaseMs`;
    await sleep(50); // the server's stamp lines follow its answers
    const d = (from: bigint | undefined, to: bigint | undefined) =>
      from === undefined || to === undefined ? undefined : Number(to - from) / 1e6;
    const fresh = [...a.store.sent].filter(([id]) => !sentBefore.has(id));
    const handed = fresh.find(([, s]) => s.holder === "b");
    if (handed) {
      const [handoverId, handover] = handed;
      const event = b.store.pushed.slice(pushedBefore).find((p) => p.holder === "b");
      const hServer = server.writes.get(handoverId);
      return new Map<Hop, number | undefined>([
        ["hand-over sent → server write start", d(handover.at, hServer?.start)],
        ["server write (hand-over)", d(hServer?.start, hServer?.end)],
        ["hand-over written → event received (push)", d(hServer?.end, event?.at)],
        ["hand-over write sent → acknowledged", d(handover.at, handover.acked)],
        ["hand-over write sent → event received (push)", d(handover.at, event?.at)],
        ["event received → elected", d(event?.at, elected)],
        ["hand-over write sent → elected (total)", d(handover.at, elected)],
        ["stop() called → elected", d(stopCalled, elected)],
      ]);
    }
    const release = fresh.find(([, s]) => s.holder === null);
    const cas = [...b.store.sent].find(([, s]) => s.holder === "b");
    const event = b.store.pushed.slice(pushedBefore).find((p) => p.holder === null);
    if (!release) return `${name}: no release or hand-over write seen`;
    const [releaseId, r] = release;
    const rServer = server.writes.get(releaseId);
    const cServer = cas ? server.writes.get(cas[0]) : undefined;
    const c = cas?.[1];
    const hops = new Map<Hop, number | undefined>([
      ["release sent → server write start", d(r.at, rServer?.start)],
      ["server write (release)", d(rServer?.start, rServer?.end)],
      ["written → release acknowledged", d(rServer?.end, r.acked)],
      ["written → event received (push)", d(rServer?.end, event?.at)],
      ["event received → CAS sent", d(event?.at, c?.at)],
      ["CAS sent → server write start", d(c?.at, cServer?.start)],
      ["server write (CAS)", d(cServer?.start, cServer?.end)],
      ["CAS written → CAS acknowledged", d(cServer?.end, c?.acked)],
      ["CAS acknowledged → elected", d(c?.acked, elected)],
      ["release sent → elected (total)", d(r.at, elected)],
      ["stop() called → elected", d(stopCalled, elected)],
    ]);
    if (v.store !== "api") {
      // No server between: the writes' own acknowledgements and the push, from the send.
      hops.set("release sent → acknowledged (no server)", d(r.at, r.acked));
      hops.set("release sent → event received (push, no server)", d(r.at, event?.at));
      hops.set("CAS sent → acknowledged (no server)", d(c?.at, c?.acked));
    }
    return hops;
  } finally {
    await a.close();
    await b.close();
  }
}

interface TimedApi {
  url: string;
  writes: Map<string, ServerWrite>;
  stop(): void;
}

/** bench/support/timed-api-process.ts, its write stamps collected by writeId. */
async function startTimedApi(db: string): Promise<TimedApi> {
  const script = join(import.meta.dirname, "support", "timed-api-process.ts");
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", script, db], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const writes = new Map<string, ServerWrite>();
  const url = await new Promise<string>((resolve, reject) => {
    let pending = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        const parsed = JSON.parse(line) as { url?: string; writeId?: string; start?: string; end?: string };
        if (parsed.url) resolve(parsed.url);
        else if (parsed.writeId)
          writes.set(parsed.writeId, { start: BigInt(parsed.start ?? 0), end: BigInt(parsed.end ?? 0) });
      }
    });
    child.once("exit", (code) => reject(new Error(`the timed API process exited with code ${code}`)));
  });
  return { url, writes, stop: () => child.kill("SIGTERM") };
}

async function etcdRows(): Promise<Array<Array<string | number>>> {
  const label = "etcd election (etcd3 client)";
  let etcd: Awaited<ReturnType<typeof startEtcd>>;
  try {
    etcd = await startEtcd();
  } catch (error) {
    return [[label, `not measured: ${(error as Error).message.split("\n")[0]}`, 0, "-", "-", "-"]];
  }
  try {
    const samples = await etcdHandoverHops(etcd.endpoint, RUNS, Math.round(LEASE_MS / 1000));
    const name = `etcd ${etcd.version} election (etcd3 client)`;
    return [
      hopRow(
        name,
        "resign sent → resign acknowledged",
        samples.map((s) => s.acknowledged),
      ),
      hopRow(
        name,
        "resign sent → elected (total)",
        samples.map((s) => s.elected),
      ),
    ];
  } finally {
    await etcd.stop();
  }
}
