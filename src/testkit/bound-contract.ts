/**
 * Leases bound to a process session (docs/design.md §4 "Bound leases") on the manual clock, run
 * against every backend that can: each "process" is a session with its own store connection and
 * fault injector, and many leases. Time moves only when the test says so; real I/O settles
 * between steps (TrackedStore.settle).
 */
import { describe, expect, it } from "vitest";
import type { BoundElector } from "../bound/bound-elector.js";
import { type LeaseSession, openSession } from "../bound/session.js";
import { ManualClock } from "../clock.js";
import type { LossReason } from "../errors.js";
import { runLeader } from "../leader/run-as-leader.js";
import type { LeaseStore } from "../lease.js";
import type { ElectorContractContext } from "./elector-contract.js";
import { FaultyStore } from "./faulty-store.js";
import { type StoreUnderTest, uniqueName } from "./store-contract.js";
import { TrackedStore } from "./tracked-store.js";

/** The base timing (ms); `timeScale` multiplies it for a store with a write-rate limit. */
const BASE = { lease: 1000, renew: 300, retry: 100, safety: 100 };

interface Lease {
  name: string;
  elector: BoundElector;
  elected: Array<{ at: number; term: number }>;
  deposed: Array<{ at: number; term: number; reason: LossReason }>;
}

interface Proc {
  id: string;
  session: LeaseSession;
  faults: FaultyStore;
  tracked: TrackedStore;
  leases: Lease[];
  errors: unknown[];
}

export interface BoundContractOptions {
  /**
   * Set with a reason when the store lets only a lease's holder process write it while held (the
   * HTTP API's holding rules): a follower cannot register as successor, so a graceful stop
   * releases and the follower takes the lease by compare-and-swap; a takeover may also come one
   * retry after the candidate's own clock allows it (the server judges by its own).
   */
  refusesCandidacy?: string;
  /** A store for one more process (its own connection and instance); default the shared store. */
  connect?: (shared: LeaseStore) => LeaseStore;
  /**
   * Multiplies every duration of the suite (lease 1000 ms, renew 300, retry 100, safety 100, and
   * each step), for a store whose own write-rate limit refuses the base timing (GCS: renewMs of
   * at least 1 s). The clock is manual, so a larger scale costs no real time.
   */
  timeScale?: number;
}

class Harness {
  readonly prefix = uniqueName("bound");
  readonly procs: Proc[] = [];
  private readonly all: TrackedStore[] = [];

  constructor(
    readonly shared: LeaseStore,
    private readonly options: BoundContractOptions,
    readonly clock: ManualClock,
    private readonly timing: { leaseMs: number; renewMs: number; retryMs: number; pollMs: number; safetyMs: number },
  ) {
    this.clock.idle = async () => {
      for (const t of this.all) await t.settle();
    };
  }

  lease(i: number): string {
    return `${this.prefix}/lease-${i}`;
  }

  /** A process: its session (record `<prefix>/_sessions/<id>`), and electors for `count` leases. */
  process(id: string, count: number, options: { handover?: boolean } = {}): Proc {
    const tracked = new TrackedStore(this.options.connect?.(this.shared) ?? this.shared);
    this.all.push(tracked);
    const faults = new FaultyStore(tracked, this.clock);
    const session = openSession({
      store: faults,
      name: `${this.prefix}/_sessions/${id}`,
      identity: id,
      ...this.timing,
      jitter: 0,
      clock: this.clock,
    });
    const p: Proc = { id, session, faults, tracked, leases: [], errors: [] };
    session.on("error", (e) => p.errors.push(e.error));
    for (let i = 0; i < count; i++) {
      const name = this.lease(i);
      const elector = session.elector({ name, handover: options.handover ?? true });
      const l: Lease = { name, elector, elected: [], deposed: [] };
      elector.on("elected", (e) => l.elected.push({ at: this.clock.now(), term: e.term }));
      elector.on("deposed", (e) => l.deposed.push({ at: this.clock.now(), term: e.term, reason: e.reason }));
      elector.on("error", (e) => p.errors.push(e.error));
      p.leases.push(l);
    }
    this.procs.push(p);
    return p;
  }

  /** A process with `count` leases, started, once the clock let it act (alone: it leads them all). */
  async started(id: string, count: number): Promise<Proc> {
    const p = this.process(id, count);
    this.start(p);
    await this.clock.advance(0);
    return p;
  }

  /** Process a with `count` leases, started and leading them all, then process b started to follow them. */
  async leaderThenFollower(count: number): Promise<{ a: Proc; b: Proc }> {
    const a = await this.started("a", count);
    const b = this.process("b", count);
    this.start(b);
    return { a, b };
  }

  start(p: Proc): void {
    for (const l of p.leases) l.elector.start();
  }

  /** Which processes lead lease i now, by the clock-checked test. */
  leaders(i: number): string[] {
    return this.procs.filter((p) => p.leases[i]?.elector.current.isLeader).map((p) => p.id);
  }

  async record(name: string) {
    return (await this.shared.get(name))?.record;
  }

  async stopAll(): Promise<void> {
    for (const p of this.procs) {
      p.faults.hang = false;
      p.faults.delayMs = 0;
      for (const abort of p.faults.hung.splice(0)) abort();
    }
    await Promise.all(this.procs.map((p) => p.session.close({ release: false })));
  }
}

export function describeBoundContract(
  backend: string,
  create: (context: ElectorContractContext) => Promise<StoreUnderTest>,
  options: BoundContractOptions = {},
): void {
  const S = options.timeScale ?? 1;
  const LEASE = BASE.lease * S;
  const RENEW = BASE.renew * S;
  const RETRY = BASE.retry * S;
  const SAFETY = BASE.safety * S;
  /** A step of the suite, in base milliseconds. */
  const ms = (base: number) => base * S;
  const withHarness = (fn: (h: Harness) => Promise<void>) => async () => {
    const clock = new ManualClock();
    const { store, dispose } = await create({ clock });
    const h = new Harness(store, options, clock, {
      leaseMs: LEASE,
      renewMs: RENEW,
      retryMs: RETRY,
      // A follower reads every retry here, so a release on a store without push is seen within one.
      pollMs: RETRY,
      safetyMs: SAFETY,
    });
    try {
      await fn(h);
    } finally {
      await h.stopAll();
      await dispose?.();
    }
  };
  /** How late a takeover may come after the candidate's own clock allows it. */
  const late = options.refusesCandidacy === undefined ? RETRY : RETRY * 3;

  describe(`bound leases contract: ${backend}`, () => {
    it(
      "a session with many leases: each elected once at term 1, then one write per renewal and no read",
      withHarness(async (h) => {
        const a = await h.started("a", 20);
        expect(a.leases.map((l) => l.elected)).toEqual(a.leases.map(() => [{ at: 0, term: 1 }]));
        const r = await h.record(h.lease(3));
        expect(r).toMatchObject({ holder: "a", term: 1 });
        expect(r?.session).toEqual({ name: `${h.prefix}/_sessions/a`, term: 1 });
        a.tracked.resetCounts();
        await h.clock.advance(RENEW * 10);
        expect(a.tracked.counts).toEqual({ get: 0, put: 10, list: 0, getMany: 0 });
        expect(a.leases.every((l) => l.deposed.length === 0 && l.elector.current.isLeader)).toBe(true);
        expect(a.errors).toEqual([]);
      }),
    );

    it(
      "two processes contending: exactly one leader per lease, no churn",
      withHarness(async (h) => {
        const a = h.process("a", 4);
        const b = h.process("b", 4);
        h.start(a);
        h.start(b);
        await h.clock.advance(0);
        for (let i = 0; i < 4; i++) expect(h.leaders(i)).toHaveLength(1);
        const before = [0, 1, 2, 3].map((i) => h.leaders(i)[0]);
        await h.clock.advance(LEASE * 5);
        expect([0, 1, 2, 3].map((i) => h.leaders(i)[0])).toEqual(before);
        for (const p of [a, b]) for (const l of p.leases) expect(l.deposed).toEqual([]);
        expect([...a.leases, ...b.leases].flatMap((l) => l.elected.map((e) => e.term))).toEqual([1, 1, 1, 1]);
      }),
    );

    it(
      "a crashed process: its session is fenced once expired by observed time, then every lease is taken at term 2",
      withHarness(async (h) => {
        const { a, b } = await h.leaderThenFollower(5);
        await h.clock.advance(RENEW * 2 + ms(10));
        const lastSent = a.leases[0]!.elector.current.lastRenewalSentAt!;
        a.faults.hang = true; // the process is gone: no further writes land
        await h.clock.advance(LEASE + late * 2);
        for (const l of b.leases) {
          expect(l.elected).toHaveLength(1);
          expect(l.elected[0]!.term).toBe(2);
          expect(l.elected[0]!.at).toBeGreaterThanOrEqual(lastSent + LEASE);
          expect(l.elected[0]!.at).toBeLessThanOrEqual(lastSent + LEASE + late);
        }
        // a stepped down when its window closed, before b could take anything.
        for (const l of a.leases)
          expect(l.deposed[0]).toEqual({ at: lastSent + LEASE - SAFETY, term: 1, reason: "expired" });
        const fenced = await h.record(`${h.prefix}/_sessions/a`);
        expect(fenced).toMatchObject({ holder: null, term: 1 });
        expect((await h.record(h.lease(2)))?.session).toEqual({ name: `${h.prefix}/_sessions/b`, term: 1 });
      }),
    );

    it(
      "a late renewal of the fenced session conflicts: the old holder never leads again under its lost term",
      withHarness(async (h) => {
        const { a, b } = await h.leaderThenFollower(3);
        await h.clock.advance(RENEW + ms(10));
        // a's next writes reach the store only after two leases: its renewals are in flight while
        // b fences its session and takes its leases.
        a.faults.delayMs = LEASE * 2;
        let bothLed = false;
        for (let t = 0; t < (LEASE * 4) / ms(50); t++) {
          await h.clock.advance(ms(50));
          for (let i = 0; i < 3; i++) if (h.leaders(i).length > 1) bothLed = true;
        }
        expect(bothLed).toBe(false);
        for (const l of b.leases) expect(l.elected.map((e) => e.term)).toEqual([2]);
        a.faults.delayMs = 0;
        await h.clock.advance(LEASE * 3);
        for (let i = 0; i < 3; i++) expect(h.leaders(i)).toEqual(["b"]);
        for (const l of a.leases) {
          expect(l.elected.map((e) => e.term)).toEqual([1]);
          expect(l.elector.current.isLeader).toBe(false);
        }
        // a's session lives on under a new term; its leases stay b's.
        expect((await h.record(`${h.prefix}/_sessions/a`))?.term).toBeGreaterThan(1);
      }),
    );

    it(
      "a session that ends and is established again leads its leases only after a new compare-and-swap (term + 1)",
      withHarness(async (h) => {
        const a = await h.started("a", 3);
        // Renewals fail (certainly not applied) until the session has expired.
        a.faults.failNextPut(...Array.from({ length: LEASE / RETRY }, () => "fail-before" as const));
        await h.clock.advance(LEASE * 3);
        for (const l of a.leases) {
          expect(l.elected.map((e) => e.term)).toEqual([1, 2]);
          expect(l.deposed.map((d) => d.reason)).toEqual(["expired"]);
          expect(l.elector.current).toMatchObject({ isLeader: true, term: 2 });
        }
        expect((await h.record(h.lease(1)))?.session).toEqual({ name: `${h.prefix}/_sessions/a`, term: 2 });
      }),
    );

    it(
      "an ambiguous session renewal that applied keeps every lease; an ambiguous acquisition that applied leads at once",
      withHarness(async (h) => {
        const a = h.process("a", 2);
        await h.clock.advance(0); // the session is established
        a.faults.failNextPut("fail-after");
        h.start(a);
        await h.clock.advance(RETRY * 2);
        expect(a.leases.map((l) => l.elected.map((e) => e.term))).toEqual([[1], [1]]);
        a.faults.failNextPut("fail-after");
        await h.clock.advance(RENEW * 4);
        expect(a.leases.every((l) => l.deposed.length === 0 && l.elector.current.isLeader)).toBe(true);
        expect(a.errors.length).toBeGreaterThanOrEqual(2);
      }),
    );

    it(
      options.refusesCandidacy === undefined
        ? "a graceful stop hands the lease to the registered successor: one write, term + 1, the successor writes nothing"
        : `a graceful stop releases, and the follower takes the lease within one retry (${options.refusesCandidacy})`,
      withHarness(async (h) => {
        const { a, b } = await h.leaderThenFollower(2);
        await h.clock.advance(RENEW * 2);
        if (options.refusesCandidacy === undefined) {
          expect((await h.record(h.lease(0)))?.successor).toEqual({
            holder: "b",
            session: { name: `${h.prefix}/_sessions/b`, term: 1 },
          });
        }
        const aWrote = a.tracked.written.length;
        const bWrote = b.tracked.written.length;
        const stopAt = h.clock.now();
        await a.leases[0]!.elector.stop();
        await h.clock.advance(RETRY);
        const l0 = b.leases[0]!;
        expect(l0.elected).toEqual([{ at: expect.any(Number), term: 2 }]);
        expect(l0.elected[0]!.at - stopAt).toBeLessThanOrEqual(RETRY);
        expect(h.leaders(0)).toEqual(["b"]);
        if (options.refusesCandidacy === undefined) {
          expect(await h.record(h.lease(0))).toMatchObject({ holder: "b", term: 2 });
          expect(a.tracked.written.slice(aWrote).filter((r) => r.name === h.lease(0))).toHaveLength(1);
          expect(b.tracked.written.slice(bWrote).filter((r) => r.name === h.lease(0))).toEqual([]);
        }
        // Lease 1 stays a's; b keeps following it.
        expect(h.leaders(1)).toEqual(["a"]);
      }),
    );

    it(
      "a successor whose session has ended is never handed the lease: a plain release instead",
      withHarness(async (h) => {
        const { a, b } = await h.leaderThenFollower(1);
        await h.clock.advance(RENEW * 2);
        b.faults.hang = true; // b's session runs out (a registered successor that died)
        await h.clock.advance(LEASE * 2);
        await a.session.close();
        const r = await h.record(h.lease(0));
        expect(r).toMatchObject({ holder: null, term: 1 });
        expect(a.leases[0]!.deposed.map((d) => d.reason)).toEqual(["released"]);
      }),
    );

    it(
      "stop without release, then a new elector for the lease in the same session: term + 1, never the old term",
      withHarness(async (h) => {
        const a = await h.started("a", 1);
        await a.leases[0]!.elector.stop({ release: false });
        const again = a.session.elector({ name: h.lease(0) });
        const terms: number[] = [];
        again.on("elected", (e) => terms.push(e.term));
        again.start();
        await h.clock.advance(RETRY);
        expect(terms).toEqual([2]);
      }),
    );

    it(
      "runLeader drives a bound elector: the next leader starts only after the old one's work returned",
      withHarness(async (h) => {
        const log: string[] = [];
        const a = h.process("a", 0);
        const b = h.process("b", 0);
        const stopA = new AbortController();
        const work = (p: Proc, signal?: AbortSignal) =>
          runLeader(
            p.session.elector({ name: h.lease(0) }),
            async ({ term, signal: s }) => {
              log.push(`${p.id} start ${term} @${h.clock.now()}`);
              await new Promise<void>((resolve) => s.addEventListener("abort", () => resolve()));
              await h.clock.sleep(ms(250));
              log.push(`${p.id} end ${term} @${h.clock.now()}`);
            },
            signal ? { signal } : {},
          );
        const ra = work(a, stopA.signal);
        await h.clock.advance(0);
        const stopB = new AbortController();
        const rb = work(b, stopB.signal);
        await h.clock.advance(ms(500));
        stopA.abort();
        await h.clock.advance(ms(250) + RETRY);
        await expect(ra).resolves.toBeUndefined();
        expect(log.slice(0, 2)).toEqual(["a start 1 @0", `a end 1 @${ms(750)}`]);
        const bStart = /^b start 2 @(\d+)$/.exec(log[2] ?? "");
        expect(Number(bStart?.[1])).toBeGreaterThanOrEqual(ms(750));
        stopB.abort();
        await h.clock.advance(ms(300));
        await rb;
      }),
    );
  });
}
