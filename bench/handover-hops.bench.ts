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
 * "After" variants (a direct handover: the release names the waiting successor): add a Variant
 * with the options or the stop call it needs; hops that no longer happen print "-".
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { Elector, type ElectorOptions } from "../src/elector.js";
import type { CallOptions, LeaseRecord, Revision, Stored } from "../src/lease.js";
import { HttpStore } from "../src/stores/http.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";
import { machineLoad, QUICK, randomBetween, sleep, tempDir, within } from "./support/common.js";
import { etcdHandoverHops } from "./support/etcd-handover.js";
import { startEtcd } from "./support/etcd-server.js";
import { median, quantile, type Table } from "./table.js";

const LEASE_MS = 15_000;
const RUNS = QUICK ? 8 : 40;
const ns = () => process.hrtime.bigint();

interface Variant {
  label: string;
  extra: Partial<ElectorOptions>;
  /** How the leader hands over (today: stop with release). */
  handOver(leader: Elector): Promise<void>;
}

const VARIANTS: Variant[] = [
  { label: "leasehold Elector, HTTP API → SQLite", extra: {}, handOver: (e) => e.stop({ release: true }) },
  // After: { label: "..., direct handover", extra: { ... }, handOver: (e) => ... },
];

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
  "release sent → elected (total)",
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
      for (let i = 0; i < RUNS; i++) {
        const sample = await oneHandover(v, server, `hops/${i}-${Date.now().toString(36)}`);
        if (typeof sample === "string") anomalies.push(sample);
        else for (const [hop, value] of sample) if (value !== undefined) hops.get(hop)?.push(value);
      }
      for (const hop of HOPS) rows.push(hopRow(v.label, hop, hops.get(hop) ?? []));
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
        `1-1.5 s before each. leasehold: the API (serve() on SQLite, group commit) in its own process, leader and ` +
        `follower Electors on their own HttpStore in the bench process; stamps on CLOCK_MONOTONIC in both processes ` +
        `(client store wrappers; the server's store wrapper, matched by writeId). etcd: its own process, two etcd3 ` +
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

async function oneHandover(v: Variant, server: TimedApi, name: string): Promise<Map<Hop, number | undefined> | string> {
  const make = (identity: string) => {
    const store = new Stamps(new HttpStore({ baseUrl: server.url }));
    const elector = new Elector({ store, name, identity, leaseMs: LEASE_MS, ...v.extra });
    return { store, elector };
  };
  const a = make("a");
  const b = make("b");
  try {
    const aElected = new Promise<true>((resolve) => a.elector.on("elected", () => resolve(true)));
    a.elector.start();
    if ((await within(aElected, 10_000)) === undefined) return `${name}: A never led`;
    const bElected = new Promise<bigint>((resolve) => b.elector.on("elected", () => resolve(ns())));
    b.elector.start();
    await sleep(randomBetween(1000, 1500)); // B has read the lease and opened its watch
    const pushedBefore = b.store.pushed.length;
    const sentBefore = new Set(a.store.sent.keys());
    await v.handOver(a.elector);
    const elected = await within(bElected, 3 * LEASE_MS);
    if (elected === undefined) return `${name}: B did not lead within 3 × leaseMs`;
    await sleep(50); // the server's stamp lines follow its answers
    const release = [...a.store.sent].find(([id, s]) => !sentBefore.has(id) && s.holder === null);
    const cas = [...b.store.sent].find(([, s]) => s.holder === "b");
    const event = b.store.pushed.slice(pushedBefore).find((p) => p.holder === null);
    if (!release) return `${name}: no release write seen`;
    const [releaseId, r] = release;
    const rServer = server.writes.get(releaseId);
    const cServer = cas ? server.writes.get(cas[0]) : undefined;
    const c = cas?.[1];
    const d = (from: bigint | undefined, to: bigint | undefined) =>
      from === undefined || to === undefined ? undefined : Number(to - from) / 1e6;
    return new Map<Hop, number | undefined>([
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
    ]);
  } finally {
    await a.elector.stop({ release: true });
    await b.elector.stop({ release: true });
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
