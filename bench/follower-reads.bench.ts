/**
 * Followers on a network store beside the DynamoDB lock clients (issue #22 item 6): on one dynalite
 * (its own process), at leaseMs 2 s, 6 s and 10 s, one leader and one waiting follower per run:
 * - reads a minute of the waiting follower (GetItem counted on the wire: each candidate talks to
 *   dynalite through its own counting proxy, test/support/dynamo-proxy.ts);
 * - failover: the leader crashes (a process: SIGKILL; the in-process Elector: stop without
 *   release) at a random point of its renewal interval; time until the follower holds the lock;
 * - handover: the leader stops gracefully and releases (SIGTERM; stop({ release: true })).
 * Contenders: the leasehold Elector on DynamoDbStore (in this process), awslabs' Java lock client and
 * cirello.io/dynamolock/v2 (bench/peers/, one process per candidate), the lock clients with their
 * default 1 s refresh period and a heartbeat of leaseMs / 3. The contenders of one run run at the
 * same time, each on its own key; times on CLOCK_MONOTONIC (the processes' own stamps,
 * process.hrtime here).
 *
 * "After" variants: add a contender to `contenders()` (e.g. the Elector with new options); every
 * row of a run meets the same dynalite and the same load.
 */

import { DynamoDbStore } from "../src/backends/dynamodb/store.js";
import { Elector, type ElectorOptions } from "../src/leader/elector.js";
import { DynamoProxy } from "../test/support/dynamo-proxy.js";
import { createLeaseTable, dynamoClient } from "../test/support/dynamo-server.js";
import { ms, ns } from "../test/support/process-cluster.js";
import { machineLoad, QUICK, randomBetween, sleep, within } from "./support/common.js";
import { startDynaliteProcess } from "./support/dynalite-process.js";
import { buildGoPeer, buildJavaPeer, type PeerArgs, type PeerCommand, PeerProcess } from "./support/lock-peers.js";
import { median, quantile, type Table } from "./table.js";

const LEASES_MS = QUICK ? [2000, 10_000] : [2000, 6000, 10_000];
/** Runs per lease length and scenario (BENCH_FOLLOWER_RUNS=n for n at every length). */
const RUNS_EACH = Number(process.env.BENCH_FOLLOWER_RUNS ?? 0);
const RUNS: Record<number, number> = QUICK
  ? { 2000: 1, 10000: 1 }
  : RUNS_EACH > 0
    ? { 2000: RUNS_EACH, 6000: RUNS_EACH, 10000: RUNS_EACH }
    : { 2000: 6, 6000: 4, 10000: 4 };
/** Both lock clients' default refresh period (acquireLock's poll of a held lock). */
const REFRESH_MS = 1000;

type Scenario = "failover" | "handover";

/** One candidate as a run drives it. */
interface Running {
  /** When it started waiting (its first read). */
  waiting: Promise<bigint>;
  acquired: Promise<bigint>;
  crash(): Promise<void>;
  release(): Promise<void>;
  close(): Promise<void>;
}

interface Contender {
  label: string;
  how: (leaseMs: number) => string;
  /** Why it is not measured (it could not be built here), or undefined. */
  missing?: string;
  table?: string;
  start(args: PeerArgs): Running;
}

interface Sample {
  reads: number;
  waitedMs: number;
  takeoverMs: number | undefined;
}

export async function run(): Promise<Table[]> {
  const dynalite = await startDynaliteProcess();
  const client = dynamoClient(dynalite.endpoint);
  const samples = new Map<string, Sample[]>();
  const list = await contenders();
  try {
    for (const c of list) if (!c.missing) c.table = await createLeaseTable(client, "key");
    for (const leaseMs of LEASES_MS) {
      for (const scenario of ["failover", "handover"] as const) {
        for (let i = 0; i < (RUNS[leaseMs] ?? 1); i++) {
          await Promise.all(
            list
              .filter((c) => !c.missing)
              .map(async (c, n) => {
                const sample = await oneRun(
                  c,
                  dynalite.endpoint,
                  leaseMs,
                  scenario,
                  `r${leaseMs}-${scenario}-${i}-${n}`,
                );
                const key = `${c.label}|${leaseMs}|${scenario}`;
                samples.set(key, [...(samples.get(key) ?? []), sample]);
              }),
          );
        }
      }
    }
  } finally {
    client.destroy();
    await dynalite.stop();
  }
  return [followerTable(list, samples)];
}

async function contenders(): Promise<Contender[]> {
  const peer = async (label: string, build: () => Promise<PeerCommand>): Promise<Contender> => {
    const how = () => `refresh ${REFRESH_MS} ms, heartbeat leaseMs / 3`;
    try {
      const command = await build();
      return { label, how, start: (args) => peerRunning(new PeerProcess(command(args))) };
    } catch (error) {
      return {
        label,
        how,
        missing: (error as Error).message.split("\n")[0] ?? "build failed",
        start: () => unreachable(),
      };
    }
  };
  return [
    // The README's Elector: since issue 31 on the process session (the follower looks at the
    // leader's session record, timed to its renewals, and reads the lease when it counts a
    // release; a graceful stop hands over in one write).
    electorContender("leasehold Elector (TypeScript), defaults: process session", {}),
    // The Elector renewing its own record (the default before issue 31), side by side.
    electorContender("leasehold Elector, session: false (renews its own record)", { session: false }),
    await peer("Go lock client (cirello.io/dynamolock/v2)", buildGoPeer),
    await peer("Java lock client (awslabs 1.3.0)", buildJavaPeer),
  ];
}

function unreachable(): never {
  throw new Error("a contender that is missing is never started");
}

function electorContender(
  label: string,
  options: Partial<ElectorOptions> | ((leaseMs: number) => Partial<ElectorOptions>),
): Contender {
  const extraOf = (leaseMs: number) => (typeof options === "function" ? options(leaseMs) : options);
  return {
    label,
    how: (leaseMs) =>
      extraOf(leaseMs).session === false
        ? `poll every pollMs 1000 ms (takeover at the observed expiry), renew every ${Math.floor(leaseMs / 3)} ms`
        : `look at the leader's session about every 1000 ms, moved to just after its renewals (every ${Math.floor(leaseMs / 3)} ms), none within 750 ms; read the lease when the session counts a release`,
    start: (args) => {
      const client = dynamoClient(args.endpoint);
      const elector = new Elector({
        store: new DynamoDbStore({ client, table: args.table, partitionKey: "key" }),
        name: args.key,
        identity: args.owner,
        leaseMs: args.leaseMs,
        ...extraOf(args.leaseMs),
      });
      const acquired = new Promise<bigint>((resolve) => elector.on("elected", () => resolve(ns())));
      const waiting = ns();
      elector.start();
      return {
        waiting: Promise.resolve(waiting),
        acquired,
        crash: () => elector.stop({ release: false }),
        release: () => elector.stop({ release: true }),
        close: async () => {
          await elector.stop({ release: false });
          client.destroy();
        },
      };
    },
  };
}

function peerRunning(p: PeerProcess): Running {
  return {
    waiting: p.waiting,
    acquired: p.acquired,
    crash: () => p.kill(),
    release: () => p.terminate(),
    close: () => p.kill(),
  };
}

/** One leader, one follower: count the follower's reads while it waits, then crash or stop the leader. */
async function oneRun(c: Contender, dynamo: string, leaseMs: number, scenario: Scenario, key: string): Promise<Sample> {
  const proxies = [await DynamoProxy.start(dynamo), await DynamoProxy.start(dynamo)] as const;
  const args = (i: 0 | 1): PeerArgs => ({
    endpoint: proxies[i].endpoint,
    table: c.table ?? "",
    key: `bench/${key}`,
    owner: i === 0 ? "a" : "b",
    leaseMs,
    heartbeatMs: Math.floor(leaseMs / 3),
    refreshMs: REFRESH_MS,
  });
  const leader = c.start(args(0));
  let follower: Running | undefined;
  try {
    if ((await within(leader.acquired, 30_000)) === undefined) throw new Error(`${c.label}: the leader never led`);
    follower = c.start(args(1));
    await within(follower.waiting, 30_000);
    await sleep(1000); // past its first read (and a JVM's warm-up)
    const before = proxies[1].count("GetItem");
    const t0 = performance.now();
    // Wait at least one lease, stopping at a random point of the leader's renewal interval.
    await sleep(leaseMs + randomBetween(0, leaseMs / 3));
    const reads = proxies[1].count("GetItem") - before;
    const waitedMs = performance.now() - t0;
    const stoppedAt = ns();
    await (scenario === "failover" ? leader.crash() : leader.release());
    const at = await within(follower.acquired, 3 * leaseMs + 5000);
    return { reads, waitedMs, takeoverMs: at === undefined ? undefined : ms(at - stoppedAt) };
  } finally {
    await Promise.all([leader.close(), follower?.close()]);
    await Promise.all(proxies.map((p) => p.close()));
  }
}

function followerTable(list: Contender[], samples: Map<string, Sample[]>): Table {
  const rows: Array<Array<string | number>> = [];
  const missed: string[] = [];
  for (const leaseMs of LEASES_MS) {
    for (const c of list) {
      if (c.missing) {
        if (leaseMs === LEASES_MS[0])
          rows.push([c.label, "-", `not measured: ${c.missing}`, "-", "-", "-", "-", "-", "-", "-"]);
        continue;
      }
      const failover = samples.get(`${c.label}|${leaseMs}|failover`) ?? [];
      const handover = samples.get(`${c.label}|${leaseMs}|handover`) ?? [];
      const all = [...failover, ...handover];
      const readsPerMinute = (all.reduce((s, x) => s + x.reads, 0) / all.reduce((s, x) => s + x.waitedMs, 0)) * 60_000;
      const times = (list: Sample[], what: string) => {
        const ok = list.flatMap((s) => (s.takeoverMs === undefined ? [] : [s.takeoverMs]));
        if (ok.length < list.length)
          missed.push(`${c.label} ${leaseMs} ms ${what}: ${list.length - ok.length} never took over`);
        return ok;
      };
      const f = times(failover, "failover");
      const h = times(handover, "handover");
      rows.push([
        c.label,
        leaseMs,
        c.how(leaseMs),
        readsPerMinute,
        f.length,
        median(f),
        Math.max(...f),
        h.length,
        median(h),
        quantile(h, 0.9),
      ]);
    }
  }
  return {
    title: "Followers on DynamoDB (dynalite) beside the DynamoDB lock clients",
    note:
      `One leader and one waiting follower per run, each its own client (the lock clients: their own processes), ` +
      `on one dynalite in its own process; the contenders of a run at the same time on different keys. Reads = the ` +
      `waiting follower's GetItem calls counted on the wire over at least one lease, per minute. Failover: the leader ` +
      `crashes (SIGKILL; the Elector: stop without release) at a random point of its renewal interval; handover: it ` +
      `releases (SIGTERM; stop({ release: true })); ms until the follower holds the lock, on CLOCK_MONOTONIC. ` +
      `${machineLoad()} at the end.` +
      (missed.length > 0 ? ` Runs without a takeover (left out): ${missed.join("; ")}.` : " Every follower took over."),
    columns: [
      "client",
      "leaseMs",
      "follower schedule",
      "follower reads / min",
      "failover runs",
      "failover median",
      "failover max",
      "handover runs",
      "handover median",
      "handover p90",
    ],
    rows,
  };
}
