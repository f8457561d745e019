/**
 * WAN-like links (issue #33, docs/partitions.md): the link between each candidate and the store
 * made slow with Toxiproxy (test/support/toxiproxy.ts), one proxy per candidate, on one dynalite
 * in its own process.
 *
 * 1. Failover and handover with 0, 20 and 100 ms added one way (a `latency` toxic on both
 *    directions: +2× on every round trip), leasehold's Elector beside the DynamoDB lock clients
 *    (bench/peers/: awslabs' Java client, cirello.io/dynamolock/v2) on the same proxies, in one run.
 *    Toxiproxy has no packet loss (a lost TCP segment is a retransmission: latency), so no loss row.
 * 2. Needless failovers against latency as a fraction of the call timeout: a leader alone, its
 *    link `f × callTimeoutMs` late (±3 %) for 15 renewal periods; counted: the terms it lost. With
 *    WAN_BENCH_SRC=<a checkout> the Elector is loaded from that checkout's src/ (the code before a
 *    change), so one machine measures before and after.
 *
 *   npx tsx bench/index.ts wan
 */
import { join } from "node:path";
import type { DynamoDbStore as DynamoDbStoreClass } from "../src/backends/dynamodb/store.js";
import type { resolveElectorOptions as resolveOptions } from "../src/elector/options.js";
import type { Elector as ElectorClass, ElectorOptions } from "../src/leader/elector.js";
import { createLeaseTable, dynamoClient } from "../test/support/dynamo-server.js";
import { ms, ns } from "../test/support/process-cluster.js";
import { startToxiproxy, type ToxiProxy, type Toxiproxy, uniqueProxyName } from "../test/support/toxiproxy.js";
import { machineLoad, QUICK, randomBetween, sleep, within } from "./support/common.js";
import { startDynaliteProcess } from "./support/dynalite-process.js";
import { buildGoPeer, buildJavaPeer, type PeerArgs, type PeerCommand, PeerProcess } from "./support/lock-peers.js";
import { median, quantile, type Table } from "./table.js";

const SRC = process.env.WAN_BENCH_SRC ?? join(import.meta.dirname, "..");
const { Elector } = (await import(join(SRC, "src", "elector.ts"))) as { Elector: typeof ElectorClass };
const { DynamoDbStore } = (await import(join(SRC, "src", "stores", "dynamodb.ts"))) as {
  DynamoDbStore: typeof DynamoDbStoreClass;
};
const { resolveElectorOptions } = (await import(join(SRC, "src", "elector", "options.ts"))) as {
  resolveElectorOptions: typeof resolveOptions;
};

const LEASE_MS = 2000;
const LATENCIES = [0, 20, 100];
const RUNS = QUICK ? 1 : 4;
const REFRESH_MS = 1000;
const FRACTIONS = [0.5, 0.8, 0.9, 0.96, 1.0, 1.1];
/** WAN_PART=needless: only the second table (the "before" run, WAN_BENCH_SRC=<old checkout>). */
const ONLY_NEEDLESS = process.env.WAN_PART === "needless";
const NEEDLESS_RUNS = 2;
const NEEDLESS_PERIODS = 15;

interface Running {
  waiting: Promise<bigint>;
  acquired: Promise<bigint>;
  crash(): Promise<void>;
  release(): Promise<void>;
  close(): Promise<void>;
}

interface Contender {
  label: string;
  missing?: string;
  table?: string;
  start(args: PeerArgs): Running;
}

export async function run(): Promise<Table[]> {
  const dynalite = await startDynaliteProcess();
  const toxiproxy = await startToxiproxy();
  const client = dynamoClient(dynalite.endpoint);
  const list = ONLY_NEEDLESS ? [] : await contenders();
  const samples = new Map<string, number[]>();
  let failoverRows: Array<Array<string | number>> = [];
  let needless: Array<Array<string | number>> = [];
  try {
    for (const c of list) if (!c.missing) c.table = await createLeaseTable(client, "key");
    for (const latency of LATENCIES) {
      for (const scenario of ["failover", "handover"] as const) {
        for (let i = 0; i < RUNS; i++) {
          await Promise.all(
            list
              .filter((c) => !c.missing)
              .map(async (c, n) => {
                const took = await oneRun(
                  toxiproxy.api,
                  c,
                  dynalite.endpoint,
                  latency,
                  scenario,
                  `${latency}-${scenario}-${i}-${n}`,
                );
                const key = `${c.label}|${latency}|${scenario}`;
                if (took !== undefined) samples.set(key, [...(samples.get(key) ?? []), took]);
              }),
          );
        }
      }
    }
    failoverRows = list.flatMap((c) =>
      c.missing
        ? [[c.label, "-", `not measured: ${c.missing}`, "-", "-", "-", "-"]]
        : LATENCIES.map((latency) => {
            const f = samples.get(`${c.label}|${latency}|failover`) ?? [];
            const h = samples.get(`${c.label}|${latency}|handover`) ?? [];
            return [c.label, latency, f.length, median(f), Math.max(...f), median(h), quantile(h, 0.9)];
          }),
    );
    needless = await needlessFailovers(toxiproxy.api, client, dynalite.endpoint);
  } finally {
    client.destroy();
    await toxiproxy.stop();
    await dynalite.stop();
  }
  const needlessTable: Table = {
    title: "Needless failovers against latency (fraction of the call timeout)",
    note:
      `A leader alone on dynalite, leaseMs ${LEASE_MS} and the default timing, its link (answers only) f × callTimeoutMs ` +
      `late ± 3 % for ${NEEDLESS_PERIODS} renewal periods, ${NEEDLESS_RUNS} runs per row: terms lost (a loss with a live store and no rival is needless). ` +
      `Elector from ${SRC === join(import.meta.dirname, "..") ? "this checkout" : SRC}. ${machineLoad()} at the end.`,
    columns: ["f", "callTimeoutMs", "added ms", "renewal periods", "terms lost"],
    rows: needless,
  };
  if (ONLY_NEEDLESS) return [needlessTable];
  return [
    {
      title: "WAN-like links: failover and handover with latency added between each candidate and the store",
      note:
        `leaseMs ${LEASE_MS}; one leader and one follower per run, each through its own Toxiproxy proxy to one dynalite ` +
        `(its own process) with the latency added on both directions (a round trip pays it twice); ${RUNS} runs per cell; ` +
        `the contenders of a run at the same time on different keys. Failover: the leader crashes (SIGKILL; the Elector: ` +
        `stop without release) at a random point of its renewal interval; handover: it releases (SIGTERM; stop with ` +
        `release). ms until the follower holds the lock, CLOCK_MONOTONIC. The lock clients: refresh ${REFRESH_MS} ms, ` +
        `heartbeat leaseMs / 3. Elector from ${SRC === join(import.meta.dirname, "..") ? "this checkout" : SRC}. ${machineLoad()} at the end.`,
      columns: [
        "client",
        "added one-way ms",
        "failover runs",
        "failover median",
        "failover max",
        "handover median",
        "handover p90",
      ],
      rows: failoverRows,
    },
    needlessTable,
  ];
}

async function contenders(): Promise<Contender[]> {
  const peer = async (label: string, build: () => Promise<PeerCommand>): Promise<Contender> => {
    try {
      const command = await build();
      return { label, start: (args) => peerRunning(new PeerProcess(command(args))) };
    } catch (error) {
      return { label, missing: (error as Error).message.split("\n")[0] ?? "build failed", start: unreachable };
    }
  };
  return [
    electorContender("leasehold Elector (TypeScript), defaults"),
    await peer("Go lock client (cirello.io/dynamolock/v2)", buildGoPeer),
    await peer("Java lock client (awslabs 1.3.0)", buildJavaPeer),
  ];
}

function unreachable(): never {
  throw new Error("a contender that is missing is never started");
}

function electorContender(label: string, extra: Partial<ElectorOptions> = {}): Contender {
  return {
    label,
    start: (args) => {
      const client = dynamoClient(args.endpoint);
      const elector = new Elector({
        store: new DynamoDbStore({ client, table: args.table, partitionKey: "key" }),
        name: args.key,
        identity: args.owner,
        leaseMs: args.leaseMs,
        ...extra,
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

async function slowLink(
  api: Toxiproxy,
  upstream: string,
  latency: number,
  jitter = 0,
  both = true,
): Promise<ToxiProxy> {
  const proxy = await api.createProxy(uniqueProxyName("wan"), upstream);
  if (latency > 0) {
    await proxy.addToxic({ type: "latency", stream: "downstream", attributes: { latency, jitter } });
    if (both) await proxy.addToxic({ type: "latency", stream: "upstream", attributes: { latency, jitter } });
  }
  return proxy;
}

async function oneRun(
  api: Toxiproxy,
  c: Contender,
  dynamo: string,
  latency: number,
  scenario: "failover" | "handover",
  key: string,
): Promise<number | undefined> {
  const proxies = [await slowLink(api, dynamo, latency), await slowLink(api, dynamo, latency)] as const;
  const args = (i: 0 | 1): PeerArgs => ({
    endpoint: proxies[i].url,
    table: c.table ?? "",
    key: `bench/wan-${key}`,
    owner: i === 0 ? "a" : "b",
    leaseMs: LEASE_MS,
    heartbeatMs: Math.floor(LEASE_MS / 3),
    refreshMs: REFRESH_MS,
  });
  const leader = c.start(args(0));
  let follower: Running | undefined;
  try {
    if ((await within(leader.acquired, 30_000)) === undefined) return undefined;
    follower = c.start(args(1));
    await within(follower.waiting, 30_000);
    await sleep(1000 + randomBetween(0, LEASE_MS / 3));
    const stoppedAt = ns();
    await (scenario === "failover" ? leader.crash() : leader.release());
    const at = await within(follower.acquired, 3 * LEASE_MS + 5000);
    return at === undefined ? undefined : ms(at - stoppedAt);
  } finally {
    await Promise.all([leader.close(), follower?.close()]);
    await Promise.all(proxies.map((p) => p.delete()));
  }
}

/** A leader alone with answers f × callTimeoutMs late: how many terms it loses in 20 renewal periods. */
async function needlessFailovers(
  api: Toxiproxy,
  client: ReturnType<typeof dynamoClient>,
  dynamo: string,
): Promise<Array<Array<string | number>>> {
  const table = await createLeaseTable(client, "key");
  const rows: Array<Array<string | number>> = [];
  for (const f of FRACTIONS) {
    let lost = 0;
    let callTimeoutMs = 0;
    for (let r = 0; r < NEEDLESS_RUNS; r++) {
      const proxy = await api.createProxy(uniqueProxyName("needless"), dynamo);
      const own = dynamoClient(proxy.url);
      const elector = new Elector({
        store: new DynamoDbStore({ client: own, table, partitionKey: "key" }),
        name: `bench/needless-${f}-${r}`,
        identity: "a",
        leaseMs: LEASE_MS,
      });
      callTimeoutMs = resolveElectorOptions({
        store: { get: async () => null, put: async () => null },
        name: "x",
        leaseMs: LEASE_MS,
      }).callTimeoutMs;
      elector.on("deposed", ({ reason }) => {
        if (reason !== "stopped") lost++; // the stop at the end of the run is no loss
      });
      const elected = new Promise<void>((resolve) => elector.on("elected", () => resolve()));
      elector.start();
      await within(elected, 30_000);
      const added = Math.round(f * callTimeoutMs);
      await proxy.addToxic({
        type: "latency",
        stream: "downstream",
        attributes: { latency: added, jitter: Math.round(added * 0.03) },
      });
      await sleep(NEEDLESS_PERIODS * Math.floor(LEASE_MS / 3));
      await elector.stop({ release: false });
      own.destroy();
      await proxy.delete();
    }
    rows.push([f, callTimeoutMs, Math.round(f * callTimeoutMs), NEEDLESS_PERIODS * NEEDLESS_RUNS, lost]);
  }
  return rows;
}
