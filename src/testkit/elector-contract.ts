/**
 * The elector's behaviour on the manual clock, run against every backend: time only moves when
 * the test says so, and real I/O settles between steps (TrackedStore.settle).
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../clock.js";
import { isAmbiguous, isLeaseStoreError } from "../errors.js";
import { Elector, type ElectorOptions, type LossReason } from "../leader/elector.js";
import { runAsLeader } from "../leader/run-as-leader.js";
import type { LeaseStore } from "../lease.js";
import { FaultyStore } from "./faulty-store.js";
import { makeRecord, type StoreUnderTest, uniqueName } from "./store-contract.js";
import { TrackedStore } from "./tracked-store.js";

/** The base timing; a store with a write-rate limit runs it scaled up (`timeScale`), on the manual clock. */
const BASE = { lease: 1000, renew: 300, retry: 100, poll: 250, safety: 100 };

interface Candidate {
  id: string;
  elector: Elector;
  faults: FaultyStore;
  elected: Array<{ at: number; term: number }>;
  deposed: Array<{ at: number; term: number; reason: LossReason }>;
  errors: unknown[];
}

class Harness {
  readonly clock: ManualClock;
  readonly tracked: TrackedStore;
  readonly name = uniqueName("elect");
  readonly candidates: Candidate[] = [];

  constructor(
    store: LeaseStore,
    private readonly timing: {
      leaseMs: number;
      renewMs: number;
      retryMs: number;
      pollMs: number;
      safetyMs: number;
      session: boolean;
    },
    clock: ManualClock,
  ) {
    this.tracked = new TrackedStore(store);
    this.clock = clock;
    clock.idle = () => this.tracked.settle();
  }

  candidate(id: string, options: Partial<ElectorOptions> = {}): Candidate {
    const faults = new FaultyStore(this.tracked, this.clock);
    const elector = new Elector({
      store: faults,
      name: this.name,
      identity: id,
      ...this.timing,
      jitter: 0,
      clock: this.clock,
      ...options,
    });
    const c: Candidate = { id, elector, faults, elected: [], deposed: [], errors: [] };
    elector.on("elected", (e) => c.elected.push({ at: this.clock.now(), term: e.term }));
    elector.on("deposed", (e) => c.deposed.push({ at: this.clock.now(), term: e.term, reason: e.reason }));
    elector.on("error", (e) => c.errors.push(e.error));
    this.candidates.push(c);
    return c;
  }

  /** A candidate started, once the clock let it act (alone: elected at time 0). */
  async started(id: string): Promise<Candidate> {
    const c = this.candidate(id);
    c.elector.start();
    await this.clock.advance(0);
    return c;
  }

  /** "a" elected at time 0, then "b" started as its follower. */
  async leaderAndFollower(): Promise<[Candidate, Candidate]> {
    const a = await this.started("a");
    const b = this.candidate("b");
    b.elector.start();
    return [a, b];
  }

  leaders(): string[] {
    return this.candidates.filter((c) => c.elector.current.isLeader).map((c) => c.id);
  }

  async stored() {
    return this.tracked.inner.get(this.name);
  }

  async stopAll(): Promise<void> {
    for (const c of this.candidates) {
      c.faults.hang = false;
      // Calls still hanging would otherwise wait for a manual clock that no longer moves.
      for (const abort of c.faults.hung.splice(0)) abort();
    }
    await Promise.all(this.candidates.map((c) => c.elector.stop({ release: false })));
  }
}

export interface ElectorContractOptions {
  /** Set with a reason when the store stamps renewedAt with its own clock (the test cannot backdate a record). */
  stampsRenewedAt?: string;
  /**
   * Set with a reason when the store itself refuses to give a lease still held, by its own clock,
   * to another holder (the HTTP API). The suite passes its manual clock to `create`, for the
   * server to judge by; a takeover may come one retry later than the candidate's own clock says
   * (the first attempt can meet the server's expiry instant exactly); and the case of another
   * holder writing over a live lease checks that the write is refused and the leader stays.
   */
  refusesTakeoverWhileHeld?: string;
  /**
   * Multiplies every duration of the suite (lease 1000 ms, renew 300, retry 100, safety 100, and
   * each step), for a store whose own write-rate limit refuses the base timing (GCS: renewMs of
   * at least 1 s). The clock is manual, so a larger scale costs no real time.
   */
  timeScale?: number;
  /**
   * The engine under test: `true` (default, as `new Elector` does) binds each candidate's lease to
   * its process session; `false` runs Electors that renew their own record (`session: false`).
   * Each backend runs the default; the renewing engine's own cases need only a few.
   */
  session?: boolean;
}

/** What the suite tells `create`: the manual clock of the test, for a server that judges expiry itself. */
export interface ElectorContractContext {
  clock: ManualClock;
}

export function describeElectorContract(
  backend: string,
  create: (context: ElectorContractContext) => Promise<StoreUnderTest>,
  options: ElectorContractOptions = {},
): void {
  const S = options.timeScale ?? 1;
  const LEASE = BASE.lease * S;
  const RENEW = BASE.renew * S;
  const RETRY = BASE.retry * S;
  const POLL = BASE.poll * S;
  const SAFETY = BASE.safety * S;
  const SESSION = options.session ?? true;
  /** A step of the suite, in base milliseconds. */
  const ms = (base: number) => base * S;
  const withHarness = (fn: (h: Harness) => Promise<void>) => async () => {
    const clock = new ManualClock();
    const { store, dispose } = await create({ clock });
    const h = new Harness(
      store,
      { leaseMs: LEASE, renewMs: RENEW, retryMs: RETRY, pollMs: POLL, safetyMs: SAFETY, session: SESSION },
      clock,
    );
    try {
      await fn(h);
    } finally {
      await h.stopAll();
      await dispose?.();
    }
  };

  describe(`elector contract: ${backend}${SESSION ? "" : " (renewing its own record)"}`, () => {
    it(
      "a single candidate is elected at term 1; each renewal is one write and no read",
      withHarness(async (h) => {
        const a = await h.started("a");
        expect(a.elected).toEqual([{ at: 0, term: 1 }]);
        expect((await h.stored())?.record).toMatchObject({ holder: "a", term: 1, leaseMs: LEASE });
        h.tracked.resetCounts();
        await h.clock.advance(RENEW * 10);
        expect(h.tracked.counts).toEqual({ get: 0, put: 10, list: 0, getMany: 0 });
        expect(a.deposed).toEqual([]);
        expect(a.elector.current).toMatchObject({ isLeader: true, term: 1, leaderUntil: RENEW * 10 + LEASE - SAFETY });
      }),
    );

    it(
      "three contending candidates: exactly one leads, the others follow without churn",
      withHarness(async (h) => {
        const cs = ["a", "b", "c"].map((id) => h.candidate(id));
        for (const c of cs) c.elector.start();
        await h.clock.advance(0);
        expect(h.leaders()).toHaveLength(1);
        const leader = h.leaders()[0];
        await h.clock.advance(LEASE * 5);
        expect(h.leaders()).toEqual([leader]);
        for (const c of cs) {
          expect(c.deposed).toEqual([]);
          expect(c.elector.current).toMatchObject({ holder: leader, term: 1 });
        }
        expect(cs.flatMap((c) => c.elected)).toEqual([{ at: 0, term: 1 }]);
      }),
    );

    it(
      "a crashed leader (no release) is replaced once its lease has passed unchanged, at term 2",
      withHarness(async (h) => {
        const [a, b] = await h.leaderAndFollower();
        await h.clock.advance(ms(1000));
        const lastSent = a.elector.current.lastRenewalSentAt!;
        await a.elector.stop({ release: false }); // the process is gone: no further writes
        expect(b.elected).toEqual([]);
        await h.clock.advance(LEASE + POLL * 2);
        expect(b.elected).toHaveLength(1);
        const took = b.elected[0]!;
        expect(took.term).toBe(2);
        // Never before the lease could have run out, and within one poll of it.
        expect(took.at).toBeGreaterThanOrEqual(lastSent + LEASE);
        expect(took.at).toBeLessThanOrEqual(lastSent + LEASE + POLL);
      }),
    );

    it(
      "a graceful release is taken over within one poll, and release keeps the term",
      withHarness(async (h) => {
        const [a, b] = await h.leaderAndFollower();
        await h.clock.advance(ms(450));
        const stopAt = h.clock.now();
        await a.elector.stop();
        // a's last write is the release, at its own term; a pushing store may already show b's.
        const aWrites = h.tracked.written.filter((r) => r.holder === "a" || r.holder === null);
        expect(aWrites.at(-1)).toMatchObject({ holder: null, term: 1 });
        expect(a.deposed).toEqual([{ at: stopAt, term: 1, reason: "released" }]);
        await h.clock.advance(POLL);
        expect(b.elected).toEqual([{ at: expect.any(Number), term: 2 }]);
        expect(b.elected[0]!.at - stopAt).toBeLessThanOrEqual(POLL);
      }),
    );

    it(
      "a leader whose store hangs steps down at sentAt + leaseMs - safetyMs, before anyone else can lead",
      withHarness(async (h) => {
        const [a, b] = await h.leaderAndFollower();
        let aborted: number | undefined;
        const signal = a.elector.signal!;
        signal.addEventListener("abort", () => {
          aborted = h.clock.now();
        });
        await h.clock.advance(ms(650));
        const lastSent = a.elector.current.lastRenewalSentAt!;
        a.faults.hang = true;
        await h.clock.advance(LEASE * 3);
        expect(a.deposed[0]).toEqual({ at: lastSent + LEASE - SAFETY, term: 1, reason: "expired" });
        expect(aborted).toBe(lastSent + LEASE - SAFETY);
        expect(b.elected).toHaveLength(1);
        expect(b.elected[0]!.at).toBeGreaterThanOrEqual(lastSent + LEASE);
        expect(b.elected[0]!.term).toBe(2);
      }),
    );

    it(
      "a waiting follower reads at most once per pollMs, and takes over at the exact expiry it observed",
      withHarness(async (h) => {
        const [a, b] = await h.leaderAndFollower();
        await h.clock.advance(ms(50));
        h.tracked.resetCounts();
        await h.clock.advance(LEASE * 3);
        // The leader renews without reading: every read here is the follower's, of the lease every
        // poll and, when the lease is bound to a session, of that session, never twice within 3/4
        // of a poll (src/bound/look-schedule.ts); a session record that counts its releases (the
        // HTTP store keeps no count) stands in for the lease's polls.
        const counted = h.tracked.written.some((r) => r.name.includes("_sessions/") && r.releases !== undefined);
        const polls = SESSION && counted ? 0 : Math.ceil((LEASE * 3) / POLL);
        const looks = SESSION ? Math.ceil((LEASE * 3) / (0.75 * POLL)) : 0;
        expect(h.tracked.counts.get).toBeLessThanOrEqual(polls + looks);
        expect(b.elected).toEqual([]);
        const lastSent = a.elector.current.lastRenewalSentAt!;
        await a.elector.stop({ release: false });
        await h.clock.advance(LEASE + POLL);
        // First seen at most one poll after it was written, taken exactly a lease after first seen.
        expect(b.elected).toHaveLength(1);
        expect(b.elected[0]!.at).toBeGreaterThanOrEqual(lastSent + LEASE);
        expect(b.elected[0]!.at).toBeLessThanOrEqual(lastSent + LEASE + POLL);
      }),
    );

    it(
      "a term lost to a closed window is never held again: after the back-off the candidate takes term + 1 on its own record",
      withHarness(async (h) => {
        const a = h.candidate("a");
        a.elector.start();
        await h.clock.advance(ms(650));
        const lastSent = a.elector.current.lastRenewalSentAt!;
        a.faults.hang = true;
        const lostAt = lastSent + LEASE - SAFETY;
        await h.clock.advance(lostAt - h.clock.now());
        expect(a.deposed).toEqual([{ at: lostAt, term: 1, reason: "expired" }]);
        a.faults.hang = false;
        for (const abort of a.faults.hung.splice(0)) abort();
        await h.clock.advance(RETRY - 1);
        expect(a.elected.map((e) => e.term)).toEqual([1]);
        await h.clock.advance(1 + POLL);
        expect(a.elected).toEqual([
          { at: 0, term: 1 },
          { at: expect.any(Number), term: 2 },
        ]);
        expect(a.elected[1]!.at).toBeGreaterThanOrEqual(lostAt + RETRY);
        expect((await h.stored())?.record).toMatchObject({ holder: "a", term: 2 });
      }),
    );

    it(
      "an ambiguous renewal that did apply keeps the lease (resolved by writeId)",
      withHarness(async (h) => {
        const a = await h.started("a");
        a.faults.failNextPut("fail-after");
        await h.clock.advance(RENEW * 5);
        expect(a.deposed).toEqual([]);
        expect(a.errors).toHaveLength(1);
        expect(a.elector.current).toMatchObject({ isLeader: true, term: 1 });
        expect((await h.stored())?.record).toMatchObject({ holder: "a", term: 1 });
      }),
    );

    it(
      "an ambiguous acquisition that did apply makes the candidate leader without waiting out its own lease",
      withHarness(async (h) => {
        const a = h.candidate("a");
        a.faults.failNextPut("fail-after");
        a.elector.start();
        await h.clock.advance(RETRY * 2);
        expect(a.elected).toEqual([{ at: expect.any(Number), term: 1 }]);
        expect(a.elected[0]!.at).toBeLessThanOrEqual(RETRY * 1.01);
        expect((await h.stored())?.record).toMatchObject({ holder: "a", term: 1 });
      }),
    );

    it(
      "an ambiguous renewal that did not apply is retried and keeps the lease",
      withHarness(async (h) => {
        const a = await h.started("a");
        const before = (await h.stored())!.revision;
        a.faults.failNextPut("ambiguous-before", "fail-before");
        await h.clock.advance(RENEW + RETRY * 2);
        expect(a.errors).toHaveLength(2);
        expect(a.deposed).toEqual([]);
        expect(a.elector.current.isLeader).toBe(true);
        // A renewing Elector renews the lease's record; a bound lease is kept by its session's.
        if (SESSION) expect((await h.stored())!.revision).toBe(before);
        else expect((await h.stored())!.revision).not.toBe(before);
        expect(a.elector.current.lastRenewalSentAt).toBe(RENEW + RETRY * 2);
      }),
    );

    // A bound lease is rewritten by no candidate while its session lives (a takeover fences the
    // session, never the lease: the bound contract), so its leader does not read it; a write from
    // outside the protocol is a renewing Elector's case, or the API's refusal.
    if (!SESSION || options.refusesTakeoverWhileHeld !== undefined) {
      it(
        options.refusesTakeoverWhileHeld === undefined
          ? "a conflicting write by another holder deposes the leader at its next renewal"
          : `a write by another holder over the live lease is refused, certainly not applied, and the leader stays (${options.refusesTakeoverWhileHeld})`,
        withHarness(async (h) => {
          const a = await h.started("a");
          const current = (await h.stored())!;
          const takeover = h.tracked.inner.put(
            makeRecord(h.name, { holder: "mallory", term: 2, leaseMs: LEASE, renewedAt: h.clock.wallNow() }),
            current.revision,
          );
          if (options.refusesTakeoverWhileHeld !== undefined) {
            const error = await takeover.then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(isLeaseStoreError(error)).toBe(true);
            expect(isAmbiguous(error)).toBe(false);
            await h.clock.advance(RENEW);
            expect(a.deposed).toEqual([]);
            expect(a.elector.current).toMatchObject({ isLeader: true, holder: "a", term: 1 });
            expect((await h.stored())?.record).toMatchObject({ holder: "a", term: 1 });
            return;
          }
          await takeover;
          await h.clock.advance(RENEW);
          expect(a.deposed).toEqual([{ at: RENEW, term: 1, reason: "conflict" }]);
          expect(a.elector.current).toMatchObject({ isLeader: false, holder: "mallory", term: 2 });
        }),
      );
    }
    it(
      "terms increase by one each time leadership passes, across releases",
      withHarness(async (h) => {
        const [a, b] = await h.leaderAndFollower();
        await h.clock.advance(RETRY);
        await a.elector.stop();
        await h.clock.advance(POLL);
        const a2 = h.candidate("a");
        a2.elector.start();
        await h.clock.advance(RETRY);
        await b.elector.stop();
        await h.clock.advance(POLL);
        expect([a.elected, b.elected, a2.elected].map((e) => e.map((x) => x.term))).toEqual([[1], [2], [3]]);
        expect((await h.stored())?.record).toMatchObject({ holder: "a", term: 3 });
      }),
    );

    // A store that stamps renewedAt itself (the HTTP API's raw PUT) cannot be given a backdated
    // record: the ghost's record is fresh when written, so the candidate must wait the lease out.
    it(
      options.stampsRenewedAt === undefined
        ? "a fresh candidate takes a lease already expired by its own stamps at once, else waits the lease out"
        : `a fresh candidate waits out a record the store stamped on write, however old its writer meant it to be (${options.stampsRenewedAt})`,
      withHarness(async (h) => {
        const wall = h.clock.wallNow();
        await h.tracked.inner.put(
          makeRecord(h.name, { holder: "ghost", term: 7, renewedAt: wall - LEASE - ms(5000), leaseMs: LEASE }),
          null,
        );
        const a = await h.started("a");
        if (options.stampsRenewedAt !== undefined) {
          await h.clock.advance(LEASE - 1);
          expect(a.elected).toEqual([]);
          await h.clock.advance(options.refusesTakeoverWhileHeld === undefined ? RETRY : RETRY * 2);
          expect(a.elected.map((e) => e.term)).toEqual([8]);
          await a.elector.stop({ release: false });
          return;
        }
        expect(a.elected).toEqual([{ at: 0, term: 8 }]);
        await a.elector.stop({ release: false });
        // A record stamped just now is not trusted to be stale: the full lease is waited out.
        const b = h.candidate("b");
        b.elector.start();
        await h.clock.advance(LEASE - 1);
        expect(b.elected).toEqual([]);
        await h.clock.advance(RETRY);
        expect(b.elected.map((e) => e.term)).toEqual([9]);
      }),
    );

    it(
      "stop() releases only after an in-flight renewal has finished, on top of it",
      withHarness(async (h) => {
        const a = await h.started("a");
        a.faults.delayMs = ms(50);
        await h.clock.advance(RENEW + ms(10)); // a renewal is now in flight for 40 more (base) ms
        const stopped = a.elector.stop();
        await h.clock.advance(ms(200));
        await stopped;
        expect(a.errors).toEqual([]);
        expect((await h.stored())?.record).toMatchObject({ holder: null, term: 1 });
      }),
    );

    it(
      "runAsLeader: the next leader starts only after the old one's work returned and it released",
      withHarness(async (h) => {
        const log: string[] = [];
        const controllers = { a: new AbortController(), b: new AbortController() };
        const work = (id: "a" | "b") =>
          runAsLeader(
            {
              store: new FaultyStore(h.tracked, h.clock),
              name: h.name,
              identity: id,
              leaseMs: LEASE,
              renewMs: RENEW,
              retryMs: RETRY,
              pollMs: POLL,
              safetyMs: SAFETY,
              jitter: 0,
              session: SESSION,
              clock: h.clock,
              signal: controllers[id].signal,
            },
            async ({ term, signal }) => {
              log.push(`${id} start ${term} @${h.clock.now()}`);
              await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));
              await h.clock.sleep(ms(250)); // shutting down takes a while
              log.push(`${id} end ${term} @${h.clock.now()}`);
            },
          );
        const a = work("a");
        await h.clock.advance(0);
        const b = work("b");
        await h.clock.advance(ms(500));
        controllers.a.abort();
        // b starts only once a's work has returned and a has released: at once with a pushing
        // store, otherwise at its next poll of the lease, or (session-bound) its next look at a's
        // session, which a's release ends: within 1.5 polls (docs/design.md §4).
        const heard = SESSION ? POLL * 1.5 : POLL;
        await h.clock.advance(ms(250) + heard);
        await expect(a).resolves.toBeUndefined();
        expect(log.slice(0, 2)).toEqual(["a start 1 @0", `a end 1 @${ms(750)}`]);
        const bStart = /^b start 2 @([\d.]+)$/.exec(log[2] ?? "");
        expect(bStart).not.toBeNull();
        expect(Number(bStart![1])).toBeGreaterThanOrEqual(ms(750));
        expect(Number(bStart![1])).toBeLessThanOrEqual(ms(750) + heard);
        controllers.b.abort();
        await h.clock.advance(ms(300));
        await b;
      }),
    );
  });
}
