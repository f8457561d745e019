/**
 * Scale: one process holding 1 to 10,000 leases, on the memory and SQLite stores, in two modes side
 * by side: one Elector per lease (each the only candidate, so each a leader renewing its own record
 * every renewMs), and every lease bound to one session (`openSession`, `session.elector`: one write
 * per renewMs for the process, docs/design.md §4). Over a measuring
 * window: CPU (process.cpuUsage), memory (RSS, and heap per elector after a forced GC), renewals
 * done vs due, renewal latency (send -> `renewed` event), renewal lateness (how far each renewal was
 * sent after its schedule: the event loop's backlog) and leases lost.
 * Then the HTTP API under load: autocannon on loopback against `serve()` on SQLite in a child
 * process, renewing 100 leases acquired first.
 */
import { loadavg } from "node:os";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import autocannon from "autocannon";
import { MemoryStore } from "../src/backends/memory/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { openSession } from "../src/bound/session.js";
import { Elector } from "../src/leader/elector.js";
import type { LeaseStore } from "../src/lease.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";
import { machineLoad, QUICK, sleep, tempDir } from "./support/common.js";
import { processCpuMs } from "./support/load.js";
import { startSqliteApi } from "./support/sqlite-api.js";
import { median, quantile, type Table } from "./table.js";

/** "elector": one Elector per lease; "bound": every lease bound to one session of the process. */
type Mode = "elector" | "bound";

interface Config {
  mode: Mode;
  leases: number;
  leaseMs: number;
  renewMs: number;
}
/** renewMs 1 s for every count, then 10,000 leases at the defaults a user runs (15 s / 5 s). */
const CONFIGS: Config[] = (["elector", "bound"] as const).flatMap((mode) => [
  ...[1, 100, 1000, 10_000].map((leases) => ({ mode, leases, leaseMs: 3000, renewMs: 1000 })),
  { mode, leases: 10_000, leaseMs: 15_000, renewMs: 5000 },
]);
/** Measuring window: at least two renewals of every lease. */
const windowMs = (c: Config) => Math.max(QUICK ? 2000 : 5000, 2 * c.renewMs);
const LOAD_SECONDS = QUICK ? 3 : 10;
const LOAD_LEASES = 100;
const LOAD_CONNECTIONS = 10;

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

interface ScaleRow {
  store: string;
  mode: Mode;
  /** Store writes per second in the window (renewals and anything else). */
  writesPerSecond: number;
  leases: number;
  renewMs: number;
  cpuPercent: number;
  rssMiB: number;
  heapKiBPerLease: number;
  renewalsDone: number;
  renewalsDue: number;
  latencyMedian: number;
  latencyP99: number;
  latenessP99: number;
  lost: number;
  load: string;
}

export async function run(): Promise<Table[]> {
  const rows: ScaleRow[] = [];
  const dir = tempDir("scale");
  try {
    for (const storeName of ["memory", "sqlite"] as const) {
      for (const [i, config] of CONFIGS.entries()) {
        const store: LeaseStore =
          storeName === "memory" ? new MemoryStore() : new SqliteStore({ path: dir.path(`scale-${i}.db`) });
        rows.push(await measure(storeName, store, config));
        await store.close?.();
      }
    }
    const load = await apiLoad(dir.path("load.db"));
    return [scaleTable(rows), load];
  } finally {
    dir.remove();
  }
}

async function measure(storeName: string, inner: LeaseStore, config: Config): Promise<ScaleRow> {
  const { mode, leases: n, leaseMs, renewMs } = config;
  const store = new TrackedStore(inner);
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const session =
    mode === "bound"
      ? openSession({ store, name: `scale/${n}/_sessions/p`, identity: "p", leaseMs, renewMs })
      : undefined;
  const electors: Array<Pick<Elector, "on" | "start" | "stop" | "current">> = [];
  let measuring = false;
  const latencies: number[] = [];
  const lateness: number[] = [];
  let renewals = 0;
  let lost = 0;
  let elected = 0;
  for (let i = 0; i < n; i++) {
    const name = `scale/${n}/${i}`;
    const e = session ? session.elector({ name }) : new Elector({ store, name, identity: `p-${i}`, leaseMs, renewMs });
    let previousSentAt: number | undefined;
    e.on("elected", () => {
      elected++;
      previousSentAt = e.current.lastRenewalSentAt;
    });
    e.on("renewed", () => {
      const sentAt = e.current.lastRenewalSentAt ?? Number.NaN;
      if (measuring) {
        renewals++;
        latencies.push(performance.now() - sentAt);
        if (previousSentAt !== undefined) lateness.push(sentAt - previousSentAt - renewMs);
      }
      previousSentAt = sentAt;
    });
    e.on("deposed", () => {
      if (measuring) lost++;
    });
    electors.push(e);
  }
  // Start them spread over one renewal period, as leases acquired over time would be; all at the
  // same instant would measure a burst every second instead.
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const due = started + (i * renewMs) / n;
    const ahead = due - performance.now();
    if (ahead > 4) await sleep(ahead);
    electors[i]!.start();
  }
  const deadline = performance.now() + 30_000;
  while (elected < n && performance.now() < deadline) await sleep(50);
  await sleep(renewMs); // one full renewal round before measuring
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  store.resetCounts();
  measuring = true;
  await sleep(windowMs(config));
  measuring = false;
  const cpu = process.cpuUsage(cpu0);
  const elapsed = performance.now() - t0;
  const writes = store.counts.put;
  const rss = process.memoryUsage().rss;
  gc();
  const heapPerLease = (process.memoryUsage().heapUsed - heapBefore) / n;
  await Promise.all(electors.map((e) => e.stop({ release: false })));
  await session?.close({ release: false });
  return {
    store: storeName,
    mode,
    writesPerSecond: writes / (elapsed / 1000),
    leases: n,
    renewMs,
    cpuPercent: ((cpu.user + cpu.system) / 1000 / elapsed) * 100,
    rssMiB: rss / 2 ** 20,
    heapKiBPerLease: heapPerLease / 1024,
    renewalsDone: renewals,
    // A bound lease is "renewed" by its session's renewal: one per renewMs for each lease.
    renewalsDue: Math.round((n * elapsed) / renewMs),
    latencyMedian: median(latencies),
    latencyP99: quantile(latencies, 0.99),
    latenessP99: quantile(lateness, 0.99),
    lost,
    load: loadavg()[0]?.toFixed(1) ?? "?",
  };
}

function scaleTable(rows: ScaleRow[]): Table {
  return {
    title: "Scale: one process, one Elector per lease vs every lease bound to one session",
    note:
      `Mode elector: one Elector per lease; bound: every lease bound to one session of the process (openSession + ` +
      `session.elector), whose renewal renews them all. Writes/s = store writes per second in the window. ` +
      `Each elector the only candidate of its lease (so a leader), leaseMs = 3 × renewMs, starts spread over one ` +
      `renewal period; measured over max(${QUICK ? 2 : 5} s, 2 renewals) after one renewal round. CPU = process.cpuUsage / wall ` +
      `time (100 % = one of the 2 cores). Heap per lease after a forced GC, against the heap before the electors existed. ` +
      `Latency = renewal sent -> renewed event; lateness = how much later than renewMs after the previous one a renewal ` +
      `was sent (timer and event-loop backlog). Lost = leases deposed in the window. ms unless named. Load = the ` +
      `machine's 1-min load average after the window (2 cores; other processes' load delays timers too).`,
    columns: [
      "store",
      "mode",
      "leases",
      "writes / s",
      "renewMs",
      "CPU %",
      "RSS MiB",
      "heap KiB / lease",
      "renewals done / due",
      "latency median",
      "latency p99",
      "lateness p99",
      "lost",
      "load",
    ],
    rows: rows.map((r) => [
      r.store,
      r.mode,
      r.leases,
      r.writesPerSecond,
      r.renewMs,
      r.cpuPercent,
      r.rssMiB,
      // One elector is below the GC's noise.
      r.leases < 100 ? "-" : r.heapKiBPerLease,
      `${r.renewalsDone} / ${r.renewalsDue}`,
      r.latencyMedian,
      r.latencyP99,
      r.latenessP99,
      r.lost,
      r.load,
    ]),
  };
}

/** autocannon against the API in a child process: POST .../renew over LOAD_LEASES leases. */
async function apiLoad(dbPath: string): Promise<Table> {
  const api = await startSqliteApi(dbPath);
  const { url, child } = api;
  try {
    const leases: Array<{ path: string; body: string }> = [];
    for (let i = 0; i < LOAD_LEASES; i++) {
      const name = encodeURIComponent(`load/lease-${i}`);
      const response = await fetch(`${url}/v1/leases/${name}/acquire`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ holder: "bench", leaseMs: 120_000 }),
      });
      const { lease } = (await response.json()) as { lease: { term: number } };
      leases.push({ path: `/v1/leases/${name}/renew`, body: JSON.stringify({ holder: "bench", term: lease.term }) });
    }
    let next = 0;
    const cpuBefore = processCpuMs(child.pid);
    const result = await autocannon({
      url,
      connections: LOAD_CONNECTIONS,
      duration: LOAD_SECONDS,
      requests: [
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          setupRequest: (request) => {
            const lease = leases[next++ % leases.length]!;
            return { ...request, path: lease.path, body: lease.body };
          },
        },
      ],
    });
    const serverCpu = ((processCpuMs(child.pid) - cpuBefore) / (result.duration * 1000)) * 100;
    return {
      title: "HTTP API under load: renewals per second",
      note:
        `autocannon ${LOAD_CONNECTIONS} connections for ${LOAD_SECONDS} s on 127.0.0.1, POST /v1/leases/{name}/renew ` +
        `(valid holder and term) round-robin over ${LOAD_LEASES} leases acquired first; the API (Node runtime, SQLite ` +
        `store) in its own process, autocannon in the parent; both share the 2 cores. Latency in ms; server CPU from ` +
        `/proc (100 % = one core). ${machineLoad()} at the end.`,
      columns: [
        "renewals / s (mean)",
        "latency median",
        "latency p99",
        "max",
        "2xx",
        "non-2xx",
        "errors",
        "server CPU %",
      ],
      rows: [
        [
          result.requests.mean,
          result.latency.p50,
          result.latency.p99,
          result.latency.max,
          result["2xx"],
          result.non2xx,
          result.errors + result.timeouts,
          serverCpu,
        ],
      ],
    };
  } finally {
    api.stop();
  }
}
