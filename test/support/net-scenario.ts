/**
 * What the network-fault process tests (test/net/*.test.ts) share: one Toxiproxy proxy per
 * candidate process, the faults made with it (partitions, half-open links, latency storms, slow
 * links), the wait for a leader within a bound after each, and the checks of the processes' own
 * work logs on one monotonic clock (test/support/process-cluster.ts: no term written after a
 * higher one, no two processes inside their windows for one lease at once, which is also "the
 * partitioned leader's work ends before the next term's first action").
 *
 * Bounds are liveness bounds, loose enough for two busy cores; what the runs measure (time to a
 * leader after a heal, needless failovers under latency) is printed and goes to the bench
 * (bench/wan.bench.ts, docs/partitions.md), never asserted.
 */
import { join } from "node:path";
import { expect } from "vitest";
import type { Prng } from "../chaos/prng.js";
import { checkShardedTrace } from "../chaos/sharded-checker.js";
import { S3_TEST_CREDENTIALS } from "../servers/versitygw.server.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./dynamo-server.js";
import { type Cluster, type Incarnation, ms, ns, readWork, termsGoBackwards, traceOf } from "./process-cluster.js";
import { type ToxiProxy, type Toxiproxy, testToxiproxy, uniqueProxyName } from "./toxiproxy.js";

export type NetFault =
  /** The link down for `ms`: refused (proxy disabled) or blackholed (every byte dropped). */
  | { kind: "partition"; how: "refused" | "blackhole"; ms: number }
  /** The answer never comes back (`timeout`), is reset (`reset_peer`) or cut short (`limit_data`), for `ms`. */
  | { kind: "half-open"; toxic: "timeout" | "reset_peer" | "limit_data"; ms: number }
  /** Every answer `latency` ± `jitter` ms late, for `ms`. */
  | { kind: "latency"; latency: number; jitter: number; ms: number }
  /** Both directions at `rate` KB/s, for `ms`. */
  | { kind: "bandwidth"; rate: number; ms: number };

export function describeFault(f: NetFault): string {
  switch (f.kind) {
    case "partition":
      return `partition (${f.how}) ${f.ms} ms`;
    case "half-open":
      return `half-open (${f.toxic} on the answer) ${f.ms} ms`;
    case "latency":
      return `latency ${f.latency}±${f.jitter} ms ${f.ms} ms`;
    case "bandwidth":
      return `bandwidth ${f.rate} KB/s ${f.ms} ms`;
  }
}

/** Makes the fault on `proxy`, holds it for its duration, heals; resolves with the heal's instant. */
export async function applyFault(proxy: ToxiProxy, f: NetFault): Promise<bigint> {
  if (f.kind === "partition") await proxy.partition(f.how);
  else if (f.kind === "half-open") {
    const attributes = f.toxic === "limit_data" ? { bytes: 64 } : { timeout: 0 }; /* reset at once / never answer */
    await proxy.addToxic({ type: f.toxic, stream: "downstream", attributes } as Parameters<ToxiProxy["addToxic"]>[0]);
  } else if (f.kind === "latency") {
    await proxy.addToxic({
      type: "latency",
      stream: "downstream",
      attributes: { latency: f.latency, jitter: f.jitter },
    });
  } else {
    await proxy.addToxic({ type: "bandwidth", stream: "downstream", attributes: { rate: f.rate } });
    await proxy.addToxic({ type: "bandwidth", stream: "upstream", attributes: { rate: f.rate } });
  }
  await new Promise((resolve) => setTimeout(resolve, f.ms));
  await proxy.heal();
  return ns();
}

/** One proxy per member id, all in front of `upstream`; `close()` deletes them. */
export class MemberProxies {
  private readonly proxies = new Map<string, ToxiProxy>();
  private constructor(private readonly api: Toxiproxy) {}

  static async create(upstream: string, members: string[], what: string): Promise<MemberProxies> {
    const p = new MemberProxies(testToxiproxy());
    for (const m of members) p.proxies.set(m, await p.api.createProxy(uniqueProxyName(`${what}-${m}`), upstream));
    return p;
  }

  of(member: string): ToxiProxy {
    const proxy = this.proxies.get(member);
    if (!proxy) throw new Error(`no proxy for member ${member}`);
    return proxy;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.proxies.values()].map((p) => p.delete()));
  }
}

/** The live process working on `bucket` (a single lease: 0), if exactly one does. */
export function leaderOf(cluster: Cluster, bucket = 0): Incarnation | undefined {
  const leading = cluster.live().filter((i) => i.held.buckets.includes(bucket));
  return leading.length === 1 ? leading[0] : undefined;
}

/** The term `inc` last worked under for `bucket`, from its log. */
export function lastTerm(inc: Incarnation, bucket = 0): number | undefined {
  const lines = readWork([inc]).filter((l) => l.bucket === bucket);
  return lines.at(-1)?.term;
}

/**
 * A leader that has written `lines` lines of work while leading (on loaded cores leadership may
 * move while we wait: then the new leader is waited for), within `boundMs`.
 */
export async function steadyLeader(cluster: Cluster, boundMs: number, bucket = 0, lines = 5): Promise<Incarnation> {
  const seen = new Map<Incarnation, number>();
  return cluster.waitFor(
    `a leader working for ${lines} lines`,
    () => {
      const leader = leaderOf(cluster, bucket);
      if (!leader) return undefined;
      const written = readWork([leader]).length;
      if (!seen.has(leader)) seen.set(leader, written);
      return written - seen.get(leader)! >= lines ? leader : undefined;
    },
    boundMs,
    50,
  );
}

export interface FaultResult {
  fault: string;
  victim: string;
  role: "leader" | "follower";
  /** The victim still led under the same term afterwards. */
  kept: boolean;
  /** From the heal to a leader working again (ms). */
  leaderAfterHealMs: number;
}

/**
 * Applies `fault` to the leader's (or a follower's) proxy, heals, and waits (within `boundMs`)
 * until one live process works on every lease in `buckets` and has written a few lines since.
 */
export async function faultAndRecover(
  cluster: Cluster,
  proxies: MemberProxies,
  fault: NetFault,
  role: "leader" | "follower",
  boundMs: number,
  buckets: number[] = [0],
): Promise<FaultResult> {
  const leader = await steadyLeader(cluster, boundMs, buckets[0]);
  const victim = role === "leader" ? leader : cluster.live().find((i) => i !== leader);
  if (!victim) throw new Error("no follower to cut off");
  const before = lastTerm(leader, buckets[0]);
  const healed = await applyFault(proxies.of(victim.member), fault);
  await cluster.waitFor(
    `every lease led within ${boundMs} ms of the heal after ${describeFault(fault)} of the ${role}`,
    () => {
      const owners = buckets.map((b) => leaderOf(cluster, b));
      if (owners.some((o) => o === undefined)) return undefined;
      return owners;
    },
    boundMs,
    50,
  );
  const at = ns();
  // Working again: whoever leads each lease by then (on loaded cores it may move once more while we
  // wait, so the owner seen at the heal is not waited for) writes a few lines.
  for (const bucket of buckets) await steadyLeader(cluster, Math.max(boundMs, 30_000), bucket, 3);
  const now = leaderOf(cluster, buckets[0]);
  return {
    fault: describeFault(fault),
    victim: victim.name,
    role,
    kept: now === leader && lastTerm(leader, buckets[0]) === before,
    leaderAfterHealMs: Math.max(0, ms(at - healed)),
  };
}

/** The checks every scenario ends with, on the processes' own logs; returns the tenures seen. */
export function checkNetLogs(cluster: Cluster, label: string, results: FaultResult[]): number {
  const lines = readWork(cluster.incarnations);
  const trace = traceOf(lines);
  const tenures = [...trace.values()].reduce((n, t) => n + t.elections.length, 0);
  console.log(
    `${label}: ${lines.length} lines of work, ${tenures} tenures; ${results
      .map(
        (r) =>
          `${r.fault} of the ${r.role}: ${r.kept ? "kept" : "moved"}, a leader ${r.leaderAfterHealMs.toFixed(0)} ms after the heal`,
      )
      .join("; ")}`,
  );
  expect(cluster.crashes).toEqual([]);
  expect(termsGoBackwards(lines)).toEqual([]);
  expect(checkShardedTrace({ buckets: trace, countOf: new Map(), keys: [] })).toEqual([]);
  return tenures;
}

/**
 * The faults of one scenario run (library → store, client → API), seeded, on the leader unless
 * said: partitions of 0.3-3 leases, the three half-open links, a latency storm of 0.7 ± 0.2 call
 * timeouts, and with `slowLink` a 1 KB/s link.
 */
export function standardFaults(
  rng: Prng,
  leaseMs: number,
  callTimeoutMs: number,
  slowLink: boolean,
): Array<{ fault: NetFault; role: "leader" | "follower" }> {
  const between = (a: number, b: number) => Math.round(leaseMs * rng.between(a, b));
  return [
    { fault: { kind: "partition", how: "refused", ms: between(0.3, 0.6) }, role: "leader" },
    { fault: { kind: "partition", how: "blackhole", ms: between(1.5, 3) }, role: "leader" },
    { fault: { kind: "partition", how: slowLink ? "refused" : "blackhole", ms: between(1, 2) }, role: "follower" },
    { fault: { kind: "half-open", toxic: "timeout", ms: between(1.5, 2) }, role: "leader" },
    { fault: { kind: "half-open", toxic: "reset_peer", ms: between(1, 1.5) }, role: "leader" },
    { fault: { kind: "half-open", toxic: "limit_data", ms: between(1, 1.5) }, role: "leader" },
    {
      fault: {
        kind: "latency",
        latency: Math.round(callTimeoutMs * 0.7),
        jitter: Math.round(callTimeoutMs * 0.2),
        ms: 3 * leaseMs,
      },
      role: "leader",
    },
    ...(slowLink
      ? [{ fault: { kind: "bandwidth", rate: 1, ms: between(1, 2) } as NetFault, role: "leader" as const }]
      : []),
  ];
}

/** The AWS SDK's credentials and region for dynalite and versitygw, for the processes this file starts. */
export function useTestAwsCredentials(): void {
  process.env.AWS_ACCESS_KEY_ID = S3_TEST_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = S3_TEST_CREDENTIALS.secretAccessKey;
  process.env.AWS_REGION = "us-east-1";
}

/** A fresh lease table on the run's dynalite; returns its name. */
export async function freshTable(): Promise<string> {
  const admin = dynamoClient(testEndpoint());
  try {
    return await createLeaseTable(admin);
  } finally {
    admin.destroy();
  }
}

/** A candidate process (test/support/net-candidate.ts) on `storeUrl`: "elector", or "bound" with `leases`. */
export function netCandidate(
  storeUrl: string,
  mode: "elector" | "bound",
  member: string,
  log: string,
  leaseMs: number,
  leases?: number,
) {
  return {
    file: process.execPath,
    args: [
      "--import",
      "tsx",
      candidateScript,
      storeUrl,
      mode,
      member,
      log,
      String(leaseMs),
      ...(leases === undefined ? [] : [String(leases)]),
    ],
  };
}

const candidateScript = join(import.meta.dirname, "net-candidate.ts");
