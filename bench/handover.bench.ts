/**
 * Graceful handover: time from `stop({ release: true })` on the leader to the next leader.
 * - ours over the HTTP API (HttpStore -> local `serve()` -> SQLite): the API's watch stream pushes
 *   the release to the follower;
 * - ours on the memory store: in-process push;
 * - ours on SQLite directly: no push, the follower learns of the release at its next poll (retryMs);
 * - the client-go-style polling elector on SQLite: next poll, retryMs * (1 + 1.2 * random);
 * - etcd's election (etcd-server on 127.0.0.1, `etcd3` client): campaign / resign.
 * leaseMs 15 s with default settings (retryMs 2 s), as a user would run them.
 */

import { HttpStore } from "../src/backends/http/store.js";
import { MemoryStore } from "../src/backends/memory/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import type { LeaseStore } from "../src/lease.js";
import { serve } from "../src/runtime/node.js";
import { defaultRetryMs, machineLoad, QUICK, tempDir } from "./support/common.js";
import { etcdHandovers } from "./support/etcd-handover.js";
import { startEtcd } from "./support/etcd-server.js";
import { type PairSample, type PairSpec, runPairRound } from "./support/pairs.js";
import { median, quantile, type Table } from "./table.js";

const LEASE_MS = 15_000;
const PARALLEL = QUICK ? 3 : 10;
const ROUNDS = QUICK ? 1 : 3;
const ETCD_RUNS = QUICK ? 5 : 30;

interface Variant {
  label: string;
  how: string;
  spec: Omit<PairSpec, "group">;
}

export async function run(): Promise<Table[]> {
  const dir = tempDir("handover");
  const apiStore = new SqliteStore({ path: dir.path("api.db") });
  const server = await serve({ store: apiStore, host: "127.0.0.1", port: 0, insecureNoAuth: true, watchPollMs: 1000 });
  const sqlite = new SqliteStore({ path: dir.path("direct.db") });
  const memory = new MemoryStore();
  const http = (): LeaseStore => new HttpStore({ baseUrl: server.url });
  const variants: Variant[] = [
    { label: "leasehold Elector, HTTP API → SQLite", how: "API watch (SSE) push", spec: ours(http) },
    { label: "leasehold Elector, memory", how: "in-process watch push", spec: ours(() => memory) },
    { label: "leasehold Elector, SQLite", how: "poll every retryMs (±20 %)", spec: ours(() => sqlite) },
    {
      label: "client-go-style polling, SQLite",
      how: "poll every retryMs × (1 + 1.2 × rand)",
      spec: { algorithm: "polling", store: () => sqlite, leaseMs: LEASE_MS },
    },
  ];
  const samples: PairSample[] = [];
  const anomalies: string[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const specs = variants.flatMap((v) => Array.from({ length: PARALLEL }, () => ({ ...v.spec, group: v.label })));
      const result = await runPairRound(specs, {
        release: true,
        round: `handover-${round}`,
        settleMs: 1000,
        // Stop at a random phase of the follower's poll cycle.
        spreadMs: () => defaultRetryMs(LEASE_MS),
      });
      samples.push(...result.samples);
      anomalies.push(...result.anomalies);
    }
  } finally {
    await server.close();
    await apiStore.close();
    await sqlite.close();
  }
  dir.remove();

  const rows: Array<Array<string | number>> = variants.map((v) => {
    const list = samples.filter((s) => s.group === v.label).map((s) => s.fromStop);
    return [v.label, v.how, list.length, median(list), quantile(list, 0.99)];
  });
  rows.push(await etcdRow());
  return [
    {
      title: "Graceful handover: stop({ release: true }) → next leader",
      note:
        `leaseMs ${LEASE_MS}, retryMs ${defaultRetryMs(LEASE_MS)} (defaults); one follower per lease, ${PARALLEL} leases ` +
        `at once per variant, ${ROUNDS} round(s); ms from the stop() call to the follower's elected event, all on ` +
        `127.0.0.1. etcd: two clients, resign() → the waiting campaign's elected event, ${ETCD_RUNS} sequential runs. ` +
        `${machineLoad()} at the end.` +
        (anomalies.length > 0 ? ` Anomalies: ${anomalies.join("; ")}.` : ""),
      columns: ["elector and store", "how the follower learns", "runs", "median ms", "p99 ms"],
      rows,
    },
  ];
}

function ours(store: () => LeaseStore): Omit<PairSpec, "group"> {
  return { algorithm: "ours", store, leaseMs: LEASE_MS };
}

async function etcdRow(): Promise<Array<string | number>> {
  let etcd: Awaited<ReturnType<typeof startEtcd>>;
  try {
    etcd = await startEtcd();
  } catch (error) {
    return ["etcd election (etcd3 client)", `not measured: ${(error as Error).message.split("\n")[0]}`, 0, "-", "-"];
  }
  try {
    const list = await etcdHandovers(etcd.endpoint, ETCD_RUNS, Math.round(LEASE_MS / 1000));
    return [
      `etcd ${etcd.version} election (etcd3 client)`,
      "watch on the leader's key (push)",
      list.length,
      median(list),
      quantile(list, 0.99),
    ];
  } finally {
    await etcd.stop();
  }
}
