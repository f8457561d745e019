/**
 * Sharded leadership, side by side with knative/pkg's scheme (every replica runs one independent
 * elector per bucket), for N = 16 and 64 buckets and M = 1..8 replicas, on the manual clock
 * (simulated time over a memory store, so every number is protocol, not machine load):
 * - balance: most and fewest buckets per replica once the group has settled (replicas start 1 s apart);
 * - store writes and reads per replica per minute in steady state;
 * - after a join (M -> M+1), a graceful leave and a crash (M -> M-1) of the replica holding the most
 *   buckets: time until balanced again (every bucket owned once, loads within one), buckets moved
 *   (ideal: N/(M+1) for a join, N/M for a leave or crash) and bucket-seconds with no owner.
 * Both use the defaults: leaseMs 15 s (renew every 5 s, retry every 2 s); ours settles 15 s
 * before moving buckets. Sampled every 100 ms of simulated time.
 */
import { QUICK } from "./support/common.js";
import { type Kind, type Replica, SimGroup } from "./support/sharded-sim.js";
import type { Table } from "./table.js";

const LEASE_MS = 15_000;
const STEP_MS = 100;
const START_GAP_MS = 1000;
const WARM_MS = 90_000;
const STEADY_MS = QUICK ? 60_000 : 300_000;
const CAP_MS = 180_000;
const COUNTS = [16, 64];
const REPLICAS = QUICK ? [1, 2, 4, 8] : [1, 2, 3, 4, 5, 6, 7, 8];

interface ChangeResult {
  /** Simulated ms until balanced again; undefined: not within CAP_MS. */
  balancedAfterMs: number | undefined;
  moved: number;
  unownedBucketSeconds: number;
}

interface Row {
  kind: Kind;
  buckets: number;
  replicas: number;
  maxLoad: number;
  minLoad: number;
  writesPerMin: number;
  readsPerMin: number;
  join: ChangeResult;
  leave: ChangeResult | undefined;
  crash: ChangeResult | undefined;
}

let doubleOwnedSamples = 0;

/** Advances in steps until balanced (or the cap), adding up unowned bucket time. */
async function measure(g: SimGroup, before: Array<string | undefined>): Promise<ChangeResult> {
  let unownedMs = 0;
  let balancedAfterMs: number | undefined;
  for (let t = 0; t < CAP_MS; t += STEP_MS) {
    await g.clock.advance(STEP_MS);
    const owners = g.owners();
    unownedMs += owners.filter((o) => o.length === 0).length * STEP_MS;
    doubleOwnedSamples += owners.filter((o) => o.length > 1).length;
    if (g.balanced()) {
      balancedAfterMs = t + STEP_MS;
      break;
    }
  }
  const after = g.owners().map((o) => o[0]);
  return {
    balancedAfterMs,
    moved: after.filter((o, b) => o !== before[b]).length,
    unownedBucketSeconds: unownedMs / 1000,
  };
}

/** A group of `m` replicas started 1 s apart and left to settle. */
async function warmGroup(kind: Kind, buckets: number, m: number): Promise<SimGroup> {
  const g = new SimGroup(kind, { buckets, leaseMs: LEASE_MS });
  for (let i = 0; i < m; i++) {
    g.add();
    await g.clock.advance(START_GAP_MS);
  }
  await g.clock.advance(WARM_MS);
  return g;
}

const heaviest = (g: SimGroup): Replica =>
  [...g.replicas].sort((a, b) => b.owned().length - a.owned().length || a.id.localeCompare(b.id))[0]!;

async function row(kind: Kind, buckets: number, m: number): Promise<Row> {
  // Balance, steady-state cost, and a join.
  const g = await warmGroup(kind, buckets, m);
  const loads = g.replicas.map((r) => r.owned().length);
  const start = g.replicas.map((r) => ({ ...r.counts }));
  await g.clock.advance(STEADY_MS);
  const minutes = STEADY_MS / 60_000;
  const per = (op: "put" | "get" | "list") =>
    g.replicas.reduce((n, r, i) => n + r.counts[op] - start[i]![op], 0) / g.replicas.length / minutes;
  const writesPerMin = per("put");
  const readsPerMin = per("get") + per("list");
  let before = g.owners().map((o) => o[0]);
  g.add();
  const join = await measure(g, before);

  let leave: ChangeResult | undefined;
  let crash: ChangeResult | undefined;
  if (m >= 2) {
    const l = await warmGroup(kind, buckets, m);
    const leaver = heaviest(l);
    before = l.owners().map((o) => o[0]);
    const left = leaver.leave();
    l.remove(leaver);
    leave = await measure(l, before);
    await left;

    const c = await warmGroup(kind, buckets, m);
    const victim = heaviest(c);
    before = c.owners().map((o) => o[0]);
    victim.crash();
    c.remove(victim);
    crash = await measure(c, before);
  }
  return {
    kind,
    buckets,
    replicas: m,
    maxLoad: Math.max(...loads),
    minLoad: Math.min(...loads),
    writesPerMin,
    readsPerMin,
    join,
    leave,
    crash,
  };
}

const label = (k: Kind) => (k === "sharded" ? "leasehold sharded" : "knative-style");
const seconds = (r: ChangeResult | undefined) =>
  r === undefined
    ? "—"
    : r.balancedAfterMs === undefined
      ? `never (> ${CAP_MS / 1000} s)`
      : (r.balancedAfterMs / 1000).toFixed(1);
const movedCell = (r: ChangeResult | undefined, ideal: number) =>
  r === undefined ? "—" : `${r.moved} (${ideal.toFixed(1)})`;
const unownedCell = (r: ChangeResult | undefined) => (r === undefined ? "—" : r.unownedBucketSeconds.toFixed(1));

export async function run(): Promise<Table[]> {
  const rows: Row[] = [];
  for (const buckets of COUNTS) {
    for (const m of REPLICAS) {
      for (const kind of ["sharded", "knative"] as const) rows.push(await row(kind, buckets, m));
    }
  }
  const tables: Table[] = [];
  for (const buckets of COUNTS) {
    const mine = rows.filter((r) => r.buckets === buckets);
    tables.push({
      title: `Sharded leadership, ${buckets} buckets: balance and steady-state cost`,
      note: `Replicas started 1 s apart, ${WARM_MS / 1000} s to settle, then ${STEADY_MS / 60_000} min of steady state (simulated time, memory store, leaseMs 15 s defaults). Writes = conditional puts; reads = gets + lists. Samples that saw a bucket inside two replicas' safe windows, whole run: ${doubleOwnedSamples}.`,
      columns: [
        "replicas",
        "elector",
        "buckets per replica (max / min)",
        "writes per replica per min",
        "reads per replica per min",
      ],
      rows: mine.map((r) => [r.replicas, label(r.kind), `${r.maxLoad} / ${r.minLoad}`, r.writesPerMin, r.readsPerMin]),
    });
    tables.push({
      title: `Sharded leadership, ${buckets} buckets: after a join, a graceful leave, a crash`,
      note: `Join: M -> M+1. Leave and crash: the replica holding the most buckets, M -> M-1. "Balanced" = every bucket owned by exactly one replica and loads within one; moved = buckets whose owner differs afterwards (ideal in brackets); unowned = bucket-seconds with no owner until balanced (or until ${CAP_MS / 1000} s).`,
      columns: [
        "replicas",
        "elector",
        "join: balanced after (s)",
        "join: moved",
        "join: unowned bucket-s",
        "leave: balanced after (s)",
        "leave: moved",
        "leave: unowned bucket-s",
        "crash: balanced after (s)",
        "crash: moved",
        "crash: unowned bucket-s",
      ],
      rows: mine.map((r) => [
        r.replicas,
        label(r.kind),
        seconds(r.join),
        movedCell(r.join, buckets / (r.replicas + 1)),
        unownedCell(r.join),
        seconds(r.leave),
        movedCell(r.leave, buckets / r.replicas),
        unownedCell(r.leave),
        seconds(r.crash),
        movedCell(r.crash, buckets / r.replicas),
        unownedCell(r.crash),
      ]),
    });
  }
  return tables;
}
