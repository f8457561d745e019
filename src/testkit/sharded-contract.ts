/**
 * The sharded elector's behaviour on the manual clock, run against every backend that can list
 * (docs/sharding.md): the member session is the lease-holder core's (src/elector/holder.ts), so
 * these cases check what the core gives a group on that backend: one write per member per renewal
 * whatever the bucket count, hand-offs at term + 1, a crashed member's buckets taken only after
 * its session ran out by observed time, a graceful leave in one write, and a session that closed
 * coming back only under a new session term. After every timer the suite checks that no bucket
 * has two members inside their safe windows.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../clock.js";
import type { LeaseStore } from "../lease.js";
import { memberName } from "../sharding/layout.js";
import { ShardedElector } from "../sharding/sharded-elector.js";
import type { ShardedElectorOptions } from "../sharding/sharded-types.js";
import { FaultyStore } from "./faulty-store.js";
import { type StoreUnderTest, uniqueName } from "./store-contract.js";
import { TrackedStore } from "./tracked-store.js";

/** The base timing (ms); `timeScale` multiplies it for a store with a write-rate limit. */
const BASE = { lease: 1000, renew: 300, retry: 100, safety: 100, settle: 500, poll: 300, grace: 100 };
const BUCKETS = 4;

interface Member {
  id: string;
  elector: ShardedElector;
  faults: FaultyStore;
  assigned: Array<{ at: number; bucket: number; term: number; kind: string }>;
}

class GroupHarness {
  readonly tracked: TrackedStore;
  readonly group = uniqueName("group");
  readonly members: Member[] = [];
  readonly violations: string[] = [];

  constructor(
    store: LeaseStore,
    readonly clock: ManualClock,
    private readonly timing: Partial<ShardedElectorOptions>,
  ) {
    this.tracked = new TrackedStore(store);
    clock.idle = async () => {
      await this.tracked.settle();
      this.check();
    };
  }

  join(id: string): Member {
    const faults = new FaultyStore(this.tracked, this.clock);
    const elector = new ShardedElector({
      store: faults,
      group: this.group,
      buckets: BUCKETS,
      identity: id,
      jitter: 0,
      clock: this.clock,
      ...this.timing,
    });
    const m: Member = { id, elector, faults, assigned: [] };
    elector.on("assigned", ({ bucket, term, kind }) => m.assigned.push({ at: this.clock.now(), bucket, term, kind }));
    // Work stops at once when a tenure ends: the grace period is not what is tested here.
    elector.on("assigned", ({ bucket, term, signal }) =>
      elector.trackWork(bucket, term, new Promise((resolve) => signal.addEventListener("abort", resolve))),
    );
    elector.start();
    this.members.push(m);
    return m;
  }

  /** Buckets a member is inside its safe window for, now (no side effect). */
  inside(m: Member): number[] {
    const state = m.elector.current;
    return state.session === undefined ? [] : state.held.map((h) => h.bucket);
  }

  /** Every bucket held by exactly one of `members` (inside its window), loads within one. */
  balanced(members: Member[]): boolean {
    const loads = members.map((m) => this.inside(m));
    const all = loads.flat().sort((a, b) => a - b);
    if (all.length !== BUCKETS || all.some((b, i) => b !== i)) return false;
    const sizes = loads.map((l) => l.length);
    return Math.max(...sizes) - Math.min(...sizes) <= 1;
  }

  async until(done: () => boolean, maxMs: number, step: number): Promise<number> {
    const end = this.clock.now() + maxMs;
    while (!done()) {
      if (this.clock.now() >= end) {
        const state = this.members.map((m) => `${m.id}: session ${m.elector.current.session}, [${this.inside(m)}]`);
        throw new Error(`not reached within ${maxMs} ms (at ${this.clock.now()}): ${state.join("; ")}`);
      }
      await this.clock.advance(step);
    }
    return this.clock.now();
  }

  async stopAll(): Promise<void> {
    for (const m of this.members) {
      m.faults.hang = false;
      for (const abort of m.faults.hung.splice(0)) abort();
    }
    await Promise.all(this.members.map((m) => m.elector.stop({ handOff: false })));
  }

  private check(): void {
    const owner = new Map<number, string>();
    for (const m of this.members) {
      for (const b of this.inside(m)) {
        const other = owner.get(b);
        if (other !== undefined) this.violations.push(`bucket ${b}: ${other} and ${m.id} at ${this.clock.now()}`);
        owner.set(b, m.id);
      }
    }
  }
}

export interface ShardedContractOptions {
  /** Multiplies every duration of the suite, for a store whose write-rate limit refuses the base timing. */
  timeScale?: number;
}

export function describeShardedContract(
  backend: string,
  create: () => Promise<StoreUnderTest>,
  options: ShardedContractOptions = {},
): void {
  const scale = options.timeScale ?? 1;
  const timing = {
    leaseMs: BASE.lease * scale,
    renewMs: BASE.renew * scale,
    retryMs: BASE.retry * scale,
    safetyMs: BASE.safety * scale,
    settleMs: BASE.settle * scale,
    pollMs: BASE.poll * scale,
    graceMs: BASE.grace * scale,
  };
  const { leaseMs: LEASE, renewMs: RENEW, safetyMs: SAFETY } = timing;
  const STEP = 50 * scale;
  const withGroup = (fn: (g: GroupHarness) => Promise<void>) => async () => {
    const { store, dispose } = await create();
    const g = new GroupHarness(store, new ManualClock(), timing);
    try {
      await fn(g);
      expect(g.violations).toEqual([]);
    } finally {
      await g.stopAll();
      await dispose?.();
    }
  };

  describe(`sharded elector contract: ${backend}`, () => {
    it(
      "one member takes every bucket at term 1 and writes once per renewal; after its window closed it comes back only under session term + 1",
      withGroup(async (g) => {
        const a = g.join("a");
        await g.until(() => g.balanced([a]), LEASE * 3, STEP);
        expect(a.assigned.map((x) => x.term)).toEqual(new Array(BUCKETS).fill(1));
        await g.clock.advance(RENEW); // settled
        g.tracked.resetCounts();
        await g.clock.advance(RENEW * 3);
        expect(g.tracked.counts.put).toBe(3);
        const first = a.elector.current.session;
        a.faults.hang = true;
        await g.until(() => g.inside(a).length === 0, LEASE * 2, STEP);
        a.faults.hang = false;
        for (const abort of a.faults.hung.splice(0)) abort();
        await g.until(() => g.balanced([a]), LEASE * 5, STEP);
        expect(a.elector.current.session).toBe(first! + 1);
        expect(a.assigned.slice(BUCKETS).map((x) => x.term)).toEqual(new Array(BUCKETS).fill(2));
      }),
    );

    it(
      "a joiner gets its share by hand-off at term + 1; a graceful leave frees every bucket in one write, taken without waiting out a lease",
      withGroup(async (g) => {
        const a = g.join("a");
        await g.until(() => g.balanced([a]), LEASE * 3, STEP);
        const b = g.join("b");
        await g.until(() => g.balanced([a, b]), LEASE * 10, STEP);
        expect(b.assigned).toHaveLength(BUCKETS / 2);
        expect(b.assigned.every((x) => x.kind === "handoff" && x.term === 2)).toBe(true);
        const before = g.tracked.written.length;
        const seen = a.assigned.length;
        const lastSent = b.elector.current.sessionUntil! - LEASE + SAFETY;
        const leaving = b.elector.stop();
        await g.until(() => g.inside(b).length === 0 && g.balanced([a]), LEASE * 3, STEP);
        await leaving;
        // Taken before b's session could have run out by anyone's clock: the release freed them.
        for (const took of a.assigned.slice(seen)) expect(took.at).toBeLessThan(lastSent + LEASE);
        expect((await g.tracked.inner.get(memberName(g.group, "b")))?.record.holder).toBeNull();
        // b's only write is its session's release (a's writes are its renewals and its claims).
        const bWrites = g.tracked.written.slice(before).filter((r) => r.name === memberName(g.group, "b"));
        expect(bWrites).toHaveLength(1);
      }),
    );

    it(
      "a crashed member's buckets are taken at term + 1 only once its session has run out by observed time",
      withGroup(async (g) => {
        const a = g.join("a");
        const b = g.join("b");
        await g.until(() => g.balanced([a, b]), LEASE * 10, STEP);
        const theirs = g.inside(b);
        const held = new Map(b.assigned.map((x) => [x.bucket, x.term]));
        const seen = a.assigned.length;
        b.faults.hang = true; // the process is gone: nothing it sends arrives any more
        const lastSent = b.elector.current.sessionUntil! - LEASE + SAFETY;
        await g.until(() => g.balanced([a]), LEASE * 10, STEP);
        for (const bucket of theirs) {
          const took = a.assigned.slice(seen).find((x) => x.bucket === bucket);
          expect(took?.at).toBeGreaterThanOrEqual(lastSent + LEASE);
          expect(took?.term).toBe(held.get(bucket)! + 1);
        }
      }),
    );
  });
}
