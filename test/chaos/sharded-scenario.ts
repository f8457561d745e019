/**
 * One seeded sharded chaos scenario on the manual clock: 2-5 members share 2-8 buckets through the
 * same faulty network as the single-lease scenarios (chaos-store.ts), with wall skew within
 * maxSkewMs and monotonic drift within the bound safetyMs covers, while members join at staggered
 * times, leave gracefully, crash, are paused past their session, are cut off from the store, and
 * restart under the same identity; sometimes an operator changes the bucket count (`reshard`).
 * Every bucket's work writes to that bucket's fenced resource with the bucket's term while it
 * believes it holds the bucket, paused or not.
 *
 * Then a quiet period: the network stops injecting faults, partitions heal, paused members resume,
 * and a member is started if none is up. At its end every bucket must be worked on by exactly one
 * live member and the loads must be balanced (liveness). The whole trace is judged by the sharded
 * checker (sharded-checker.ts). Everything derives from `seed`.
 */

import { MemoryStore } from "../../src/backends/memory/store.js";
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { ManualClock } from "../../src/clock.js";
import type { LeaseStore } from "../../src/lease.js";
import { bucketName } from "../../src/sharding/layout.js";
import { reshard } from "../../src/sharding/reshard.js";
import { runSharded } from "../../src/sharding/run-sharded.js";
import type { ShardedElector } from "../../src/sharding/sharded-elector.js";
import { ChaosStore, Network } from "./chaos-store.js";
import { type Election, SafeWindowTracker } from "./checker.js";
import { FencedResource } from "./fenced-resource.js";
import { Prng } from "./prng.js";
import { type MonotonicFaults, SimProcess } from "./process.js";
import { type Backend, drawProfile, driftBound } from "./scenario.js";
import { type BucketTrace, checkLiveness, checkShardedTrace, unownedTime } from "./sharded-checker.js";

export interface ShardedScenarioOptions {
  verbose?: boolean;
  /** Monotonic drift as a multiple of the bound safetyMs covers (above 1 breaks the assumption). */
  driftFactor?: number;
  /** Skip the session fence before taking an expired member's buckets (checker self-test). */
  unfenced?: boolean;
}

export interface ShardedScenarioStats {
  faults: Record<string, number>;
  assignments: number;
  handoffs: number;
  takeovers: number;
  fences: number;
  reshards: number;
  fencedAccepted: number;
  fencedRejected: number;
  staleWrites: number;
  /** Bucket-milliseconds without an owner during the final balanced stretch of the quiet period (0). */
  unownedQuietMs: number;
  /** Bucket-milliseconds without an owner over the whole run. */
  unownedMs: number;
  virtualMs: number;
}

export interface ShardedScenarioResult {
  seed: number;
  backend: Backend;
  summary: string;
  violations: string[];
  stats: ShardedScenarioStats;
  timeline: string[];
}

interface Instance {
  label: string;
  identity: string;
  slot: number;
  process: SimProcess;
  elector: ShardedElector | undefined;
  leave: AbortController;
  leaving: boolean;
}

interface Action {
  at: number;
  seq: number;
  run: () => Promise<void> | void;
}

const GROUP = "chaos/group";
const KEYS = Array.from({ length: 120 }, (_, i) => `key-${i}`);
const immediate = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function runShardedScenario(
  seed: number,
  backend: Backend,
  options: ShardedScenarioOptions = {},
): Promise<ShardedScenarioResult> {
  const rng = new Prng(seed ^ 0x5eed5);
  const leaseMs = rng.pick([500, 1000, 2000]);
  const renewMs = Math.round(leaseMs * rng.between(0.2, 0.4));
  const t = {
    leaseMs,
    renewMs,
    retryMs: Math.max(1, Math.round(leaseMs * rng.between(0.05, 0.2))),
    safetyMs: Math.round(leaseMs / 10),
    maxSkewMs: Math.round(leaseMs * rng.pick([0, 0.1, 0.5])),
    jitter: rng.pick([0, 0.2]),
    settleMs: Math.round(leaseMs * rng.between(0.5, 1.5)),
    pollMs: Math.round(renewMs * rng.between(1, 2)),
    graceMs: Math.round(leaseMs * 0.5),
    writeEveryMs: Math.max(1, Math.round(renewMs * rng.between(0.5, 1.5))),
  };
  let buckets = rng.pick([2, 3, 4, 6, 8]);
  const firstBuckets = buckets;
  const profile = { ...drawProfile(rng, t, backend), watch: false };
  const slots = rng.int(2, 5);
  const faultMs = leaseMs * rng.int(8, 16);
  const timeline: string[] = [];
  const violations: string[] = [];

  const trackers = new Map<number, SafeWindowTracker>();
  const tracker = (b: number) => {
    let tr = trackers.get(b);
    if (!tr) {
      tr = new SafeWindowTracker();
      trackers.set(b, tr);
    }
    return tr;
  };
  const instances: Instance[] = [];
  const clock: ManualClock = new ManualClock({ idle: () => settle() });
  const settle = async () => {
    await immediate();
    await immediate();
    sample();
  };
  const log = (line: string) => {
    if (options.verbose) timeline.push(`${String(Math.round(clock.now() * 100) / 100).padStart(9)} ${line}`);
  };

  const inner: LeaseStore = backend === "memory" ? new MemoryStore() : new SqliteStore({ path: ":memory:" });
  const network = new Network(clock, rng.fork(), profile);
  const resources = new Map<number, FencedResource>();
  const resource = (b: number) => {
    let r = resources.get(b);
    if (!r) {
      r = new FencedResource();
      resources.set(b, r);
    }
    return r;
  };
  const elections = new Map<number, Election[]>();
  const countOf = new Map<string, number>();
  const stats = { assignments: 0, handoffs: 0, takeovers: 0, fences: 0, reshards: 0, staleWrites: 0 };
  let generation = 0;
  /** True time of the last tenure that began or ended anywhere. */
  let lastChangeAt = 0;

  const wallOffsets = Array.from({ length: slots }, () => Math.round(rng.between(-0.5, 0.5) * t.maxSkewMs));
  for (const offset of wallOffsets) if (offset !== 0) network.count("wall-skew");
  const clockRng = rng.fork();
  const maxDrift = (options.driftFactor ?? 1) * driftBound(t.leaseMs, t.safetyMs);
  const drifting = clockRng.chance(0.8);
  const monotonic: MonotonicFaults[] = Array.from({ length: slots }, () => ({
    driftRate: drifting ? maxDrift * (clockRng.chance(0.5) ? clockRng.pick([-1, 1]) : clockRng.between(-1, 1)) : 0,
    originMs: clockRng.int(0, 100) * t.leaseMs,
  }));
  for (const m of monotonic) if (m.driftRate !== 0) network.count("clock-drift");

  /** What instance `i` acts on now, per bucket: the tenure's term and its session's end on true time. */
  function sample(): void {
    const now = clock.now();
    for (const i of instances) {
      const beliefs = new Map<number, { term: number; until: number }>();
      const e = i.elector;
      const state = e?.current;
      if (state?.sessionUntil !== undefined && state.session !== undefined) {
        const until = i.process.clock.toTrue(state.sessionUntil);
        for (const h of state.held) beliefs.set(h.bucket, { term: h.term, until });
      }
      for (const b of new Set([...trackers.keys(), ...beliefs.keys()])) tracker(b).sample(i.label, now, beliefs.get(b));
    }
  }

  function spawn(slot: number): Instance {
    const identity = `m${slot}`;
    const label = `${identity}#${generation++}`;
    const process = new SimProcess(label, clock, wallOffsets[slot] ?? 0, settle, monotonic[slot]);
    const instance: Instance = {
      label,
      identity,
      slot,
      process,
      elector: undefined,
      leave: new AbortController(),
      leaving: false,
    };
    instances.push(instance);
    const random = rng.fork();
    log(`${label} starts (wall offset ${wallOffsets[slot]} ms, monotonic rate ${process.clock.rate})`);
    runSharded(
      {
        store: new ChaosStore(inner, network, process),
        group: GROUP,
        buckets,
        identity,
        leaseMs: t.leaseMs,
        renewMs: t.renewMs,
        retryMs: t.retryMs,
        safetyMs: t.safetyMs,
        maxSkewMs: t.maxSkewMs,
        jitter: t.jitter,
        settleMs: t.settleMs,
        pollMs: t.pollMs,
        graceMs: t.graceMs,
        clock: process.clock,
        random: () => random.next(),
        signal: instance.leave.signal,
        onElector: (e) => {
          instance.elector = e;
          if (options.unfenced) unfence(e);
          e.on("assigned", ({ bucket, buckets: n, term, kind }) => {
            stats.assignments++;
            lastChangeAt = clock.now();
            countOf.set(`${bucket}/${term}`, n);
            const list = elections.get(bucket) ?? [];
            list.push({ candidate: label, identity, term, at: clock.now() });
            elections.set(bucket, list);
            log(`${label} works on bucket ${bucket}/${n} term ${term} (${kind})`);
          });
          e.on("revoked", ({ bucket, term, reason }) => {
            lastChangeAt = clock.now();
            log(`${label} stops bucket ${bucket} term ${term}: ${reason}`);
          });
          e.on("handoff", ({ bucket, to, term }) => {
            stats.handoffs++;
            log(`${label} hands bucket ${bucket} to ${to} at term ${term}`);
          });
          e.on("takeover", ({ bucket, from }) => {
            stats.takeovers++;
            log(`${label} takes bucket ${bucket} from ${from}`);
          });
          e.on("fenced", ({ member, term }) => {
            stats.fences++;
            log(`${label} fences ${member} session ${term}`);
          });
          e.on("session", ({ phase, term, reason }) => log(`${label} session ${term} ${phase} ${reason ?? ""}`));
          e.on("view", ({ members }) => log(`${label} view ${members.join(",")}`));
        },
      },
      async ({ bucket, term, signal }) => {
        // The bucket's work, as an application would write: with the bucket's term, checking only its signal.
        while (!signal.aborted) {
          await process.clock.sleep(t.writeEveryMs, signal);
          if (signal.aborted) return;
          const sentAt = clock.now();
          const state = instance.elector?.current;
          if (state?.session === undefined || state.sessionUntil === undefined) stats.staleWrites++;
          void network.travel().then(() => {
            const accepted = resource(bucket).land(label, term, sentAt, clock.now());
            if (!accepted) log(`bucket ${bucket} resource rejects term ${term} from ${label}`);
          });
        }
      },
    ).catch((error: unknown) => violations.push(`harness: ${label} runSharded failed: ${String(error)}`));
    return instance;
  }

  // ---- the schedule ----
  const actions: Action[] = [];
  let seq = 0;
  const at = (when: number, run: Action["run"]) => actions.push({ at: when, seq: seq++, run });
  const current: Array<Instance | undefined> = new Array(slots).fill(undefined);
  const up = () =>
    current.filter((i): i is Instance => i !== undefined && i.process.current !== "crashed" && !i.leaving);
  const victim = () => {
    const pool = up();
    return pool.length > 0 ? rng.pick(pool) : undefined;
  };
  const restartLater = (slot: number) => {
    if (!rng.chance(0.7)) return;
    at(clock.now() + rng.between(0, 2 * t.leaseMs), () => {
      const c = current[slot];
      if (!c || c.process.current === "crashed" || c.leaving) {
        network.count("restart");
        current[slot] = spawn(slot);
      }
    });
  };

  for (let slot = 0; slot < slots; slot++) {
    // Staggered joins: some at once, some later (each a join while others hold the buckets).
    at(rng.chance(0.4) ? 0 : rng.between(0, faultMs * 0.6), () => {
      if (slot > 0 && clock.now() > 0) network.count("join");
      current[slot] = spawn(slot);
    });
  }
  for (let n = rng.int(0, 3); n > 0; n--) {
    const forMs = t.leaseMs * rng.between(0.5, 3);
    at(rng.between(0, faultMs * 0.8), () => {
      const target = victim();
      if (target?.process.current !== "running") return;
      network.count("pause");
      log(`${target.label} paused for ${Math.round(forMs)} ms`);
      target.process.pause();
      at(clock.now() + forMs, async () => {
        log(`${target.label} resumes with ${target.process.backlog} late wake-ups`);
        await target.process.resume();
      });
    });
  }
  for (let n = rng.int(0, 2); n > 0; n--) {
    at(rng.between(0, faultMs * 0.8), () => {
      const target = victim();
      if (!target) return;
      network.count("crash");
      log(`${target.label} crashes`);
      target.process.crash();
      restartLater(target.slot);
    });
  }
  for (let n = rng.int(0, 2); n > 0; n--) {
    at(rng.between(0, faultMs * 0.8), () => {
      const target = victim();
      if (!target) return;
      network.count("graceful-leave");
      log(`${target.label} leaves`);
      target.leaving = true;
      target.process.deliver(() => target.leave.abort());
      restartLater(target.slot);
    });
  }
  for (let n = rng.int(0, 2); n > 0; n--) {
    const forMs = t.leaseMs * rng.between(0.3, 3);
    at(rng.between(0, faultMs * 0.8), () => {
      const target = victim();
      if (!target || network.isPartitioned(target.label)) return;
      network.count("partition");
      log(`${target.label} cut off from the store for ${Math.round(forMs)} ms`);
      network.partition(target.label, true);
      at(clock.now() + forMs, () => {
        log(`${target.label} reconnected`);
        network.partition(target.label, false);
      });
    });
  }
  if (rng.chance(0.25)) {
    const to = rng.pick([2, 3, 4, 5, 6, 8, 10].filter((n) => n !== buckets));
    at(rng.between(faultMs * 0.2, faultMs * 0.7), async () => {
      network.count("reshard");
      stats.reshards++;
      log(`operator reshards ${buckets} -> ${to}`);
      await reshard({ store: inner, group: GROUP, buckets: to, clock });
      buckets = to;
    });
  }

  // ---- run: faults, then a quiet period ----
  // The quiet period lasts until the group has been balanced, with no bucket changing hands, for
  // two leases (or a deadline passes: then the liveness check reports what is missing).
  const quietMs = t.settleMs + 20 * t.leaseMs;
  const holdMs = 2 * t.leaseMs;
  at(faultMs, async () => {
    log("quiet: no more faults");
    network.calm();
    for (const i of instances) {
      if (network.isPartitioned(i.label)) network.partition(i.label, false);
      if (i.process.current === "paused") await i.process.resume();
    }
    if (up().length === 0) {
      const slot = rng.int(0, slots - 1);
      current[slot] = spawn(slot);
    }
  });
  const runActionsUntil = async (until: number) => {
    for (;;) {
      actions.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = actions[0];
      if (!next || next.at > until) break;
      actions.shift();
      await clock.advanceTo(next.at);
      await next.run();
      await settle();
    }
    await clock.advanceTo(until);
  };
  const liveNow = () => {
    const live = new Map<string, number[]>();
    for (const i of up()) {
      const state = i.elector?.current;
      if (state?.session !== undefined)
        live.set(
          i.label,
          state.held.map((h) => h.bucket),
        );
    }
    return live;
  };
  await runActionsUntil(faultMs);
  const deadline = faultMs + quietMs;
  let balancedSince: number | undefined;
  while (clock.now() < deadline) {
    await runActionsUntil(Math.min(deadline, clock.now() + t.leaseMs / 4));
    const ok = actions.length === 0 && checkLiveness({ buckets, live: liveNow() }).length === 0;
    if (!ok) balancedSince = undefined;
    else balancedSince = Math.max(balancedSince ?? clock.now(), lastChangeAt);
    if (balancedSince !== undefined && clock.now() - balancedSince >= holdMs) break;
  }
  const endMs = clock.now();
  for (const tr of trackers.values()) tr.closeAll(endMs);
  // Liveness at the end of the quiet period, before anything is stopped.
  violations.push(...checkLiveness({ buckets, live: liveNow() }));
  for (const i of instances) i.process.crash();

  const traces = new Map<number, BucketTrace>();
  for (const [b, tr] of trackers) {
    const name = bucketName(GROUP, b);
    traces.set(b, {
      elections: elections.get(b) ?? [],
      windows: tr.windows,
      storeWrites: network.applied.filter((w) => w.name === name),
      fenced: resources.get(b)?.writes ?? [],
    });
  }
  for (const [b, list] of elections) {
    if (!traces.has(b)) traces.set(b, { elections: list, windows: [], storeWrites: [], fenced: [] });
  }
  violations.push(...checkShardedTrace({ buckets: traces, countOf, keys: KEYS }));
  await inner.close?.();

  const fenced = [...resources.values()];
  return {
    seed,
    backend,
    summary: `${slots} members, ${firstBuckets}${stats.reshards ? `->${buckets}` : ""} buckets, lease ${t.leaseMs} ms, renew ${t.renewMs}, retry ${t.retryMs}, poll ${t.pollMs}, settle ${t.settleMs}, maxSkew ${t.maxSkewMs}, drift ${monotonic.map((m) => m.driftRate?.toFixed(4)).join("/")}, ${endMs} ms`,
    violations,
    stats: {
      faults: Object.fromEntries(network.faults),
      ...stats,
      fencedAccepted: fenced.reduce((n, r) => n + r.accepted, 0),
      fencedRejected: fenced.reduce((n, r) => n + r.rejected, 0),
      unownedQuietMs: unownedTime(traces, buckets, endMs - holdMs, endMs),
      unownedMs: unownedTime(traces, buckets, 0, endMs),
      virtualMs: endMs,
    },
    timeline,
  };
}

/**
 * Checker self-test: makes this member take an expired member's buckets without fencing its
 * session first (its record is left as it was), which is exactly the step the safety argument needs.
 */
function unfence(elector: ShardedElector): void {
  const e = elector as unknown as { members: Map<string, { holder: string | null }>; fence: (m: unknown) => void };
  e.fence = (m: unknown) => {
    const member = m as { id: string; holder: string | null; term: number };
    // Pretend the fence applied: our view now says the session is over, the store still says it lives.
    const known = e.members.get(member.id);
    if (known) e.members.set(member.id, { ...known, holder: null });
  };
}
