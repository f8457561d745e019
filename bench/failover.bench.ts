/**
 * Crash failover: a leader stops without releasing (`stop({ release: false })`: no further writes,
 * as if the process died) at a random instant of its renewal cycle; we time until the follower
 * leads. Ours against the client-go-style polling elector (bench/support/polling-elector.ts) with
 * the same leaseMs and retryMs, on the memory store (which pushes changes to our follower) and on
 * SQLite (no push: our follower polls every retryMs), and ours over the HTTP API (HttpStore, each
 * candidate its own instance, the API on SQLite with the default maxSkewMs of 1000 ms: the API
 * refuses a takeover until its own clock, with that bound, says the lease expired, and the
 * follower tries again after retryMs). Real time; many leases run side by side so the 15 s lease
 * needs one round.
 *
 * The bound: a follower that waits out the lease on its own clock cannot lead sooner than leaseMs
 * after the last renewal it saw, so "last write -> new leader" is >= leaseMs for both algorithms.
 */

import { HttpStore } from "../src/backends/http/store.js";
import { MemoryStore } from "../src/backends/memory/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { serve } from "../src/runtime/node.js";
import type { Algorithm } from "./support/common.js";
import { machineLoad, QUICK, tempDir } from "./support/common.js";
import { type PairSample, type PairSpec, runPairRound } from "./support/pairs.js";
import { median, quantile, type Table } from "./table.js";

const LEASES_MS = [2000, 5000, 15_000];
/** Leases run at once per round, per (store, algorithm). */
const PARALLEL = QUICK ? 3 : 12;
const ROUNDS: Record<number, number> = QUICK ? { 2000: 1, 5000: 1, 15000: 1 } : { 2000: 3, 5000: 2, 15000: 1 };
const ALGORITHMS: Algorithm[] = ["ours", "polling"];

export async function run(): Promise<Table[]> {
  const dir = tempDir("failover");
  const memory = new MemoryStore();
  const sqlite = new SqliteStore({ path: dir.path("failover.db") });
  const apiStore = new SqliteStore({ path: dir.path("failover-api.db") });
  const server = await serve({ store: apiStore, host: "127.0.0.1", port: 0, insecureNoAuth: true });
  const stores = {
    memory: () => memory,
    sqlite: () => sqlite,
    "http (API, maxSkewMs 1000) -> sqlite": () => new HttpStore({ baseUrl: server.url }),
  };
  const samples: PairSample[] = [];
  const anomalies: string[] = [];
  try {
    for (const leaseMs of LEASES_MS) {
      for (let round = 0; round < (ROUNDS[leaseMs] ?? 1); round++) {
        const specs: PairSpec[] = [];
        for (const [storeName, store] of Object.entries(stores)) {
          for (const algorithm of ALGORITHMS) {
            // Over HTTP the library's elector only: the polling elector is the baseline of the local stores.
            if (storeName.startsWith("http") && algorithm !== "ours") continue;
            for (let i = 0; i < PARALLEL; i++) {
              specs.push({ group: `${storeName}|${algorithm}|${leaseMs}`, algorithm, store, leaseMs });
            }
          }
        }
        const result = await runPairRound(specs, {
          release: false,
          round: `failover-${leaseMs}-${round}`,
          settleMs: Math.max(500, leaseMs / 4),
          // Crash anywhere in our renewal cycle (renewMs = leaseMs / 3), the same for both algorithms.
          spreadMs: (s) => s.leaseMs / 3,
        });
        samples.push(...result.samples);
        anomalies.push(...result.anomalies);
      }
    }
  } finally {
    await server.close();
    await apiStore.close();
    await sqlite.close();
    dir.remove();
  }
  return [failoverTable(samples, anomalies)];
}

function failoverTable(samples: PairSample[], anomalies: string[]): Table {
  const groups = new Map<string, PairSample[]>();
  for (const s of samples) groups.set(s.group, [...(groups.get(s.group) ?? []), s]);
  const rows = [...groups.entries()]
    .sort(([a], [b]) => sortKey(a).localeCompare(sortKey(b)))
    .map(([group, list]) => {
      const [store = "", algorithm = "", leaseMs = ""] = group.split("|");
      const fromStop = list.map((s) => s.fromStop);
      const fromLast = list.map((s) => s.fromLastWrite);
      return [
        store,
        algorithm === "ours" ? "leasehold Elector" : "client-go-style polling",
        Number(leaseMs),
        list.length,
        median(fromStop),
        quantile(fromStop, 0.99),
        median(fromLast),
        quantile(fromLast, 0.99),
        Number(leaseMs),
      ];
    });
  return {
    title: "Crash failover: time until another candidate leads",
    note:
      `Leader stopped with release: false at a random point of a leaseMs/3 window; one follower per lease; ` +
      `${PARALLEL} leases at once per (store, elector), real time, ms. Both electors: retryMs = leaseMs / 7.5; ` +
      `ours renewMs = leaseMs / 3, polling renews every retryMs (client-go), RenewDeadline = 2/3 leaseMs. ` +
      `p99 of few runs is close to the maximum. Lower bound: leaseMs after the last renewal. ${machineLoad()} at the end.` +
      (anomalies.length > 0
        ? ` Anomalies: ${anomalies.join("; ")}.`
        : " No anomalies (every follower led, none early)."),
    columns: [
      "store",
      "elector",
      "leaseMs",
      "runs",
      "crash→leader median",
      "crash→leader p99",
      "last renewal→leader median",
      "last renewal→leader p99",
      "lower bound",
    ],
    rows,
  };
}

/** Rows by store, then leaseMs, then ours before polling: the two electors sit side by side. */
function sortKey(group: string): string {
  const [store = "", algorithm = "", leaseMs = ""] = group.split("|");
  return `${store}|${leaseMs.padStart(6, "0")}|${algorithm}`;
}
