/** Leases bound to a process session: the contract on memory and SQLite (and on a store refusing candidacy), the costs, and the options. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { SessionObserver } from "../src/bound/observer.js";
import { sameSuccessor } from "../src/bound/refs.js";
import { openSession } from "../src/bound/session.js";
import { ManualClock } from "../src/clock.js";
import type { Lane } from "../src/elector/lane.js";
import { isLeaseValidationError, LeaseStillHeldError } from "../src/errors.js";
import { Elector } from "../src/leader/elector.js";
import type { CallOptions, LeaseRecord, LeaseStore, Revision, Stored } from "../src/lease.js";
import { describeBoundContract } from "../src/testkit/bound-contract.js";
import { makeRecord } from "../src/testkit/safety-cases.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";

describeBoundContract("memory", async () => ({ store: new MemoryStore() }));

/**
 * A store that, like an API before hand-overs, lets only a held lease's holder write it: a
 * registration (holder and term kept, the successor changed) is refused as still held.
 */
class RefusesCandidacy extends StoreWrapper {
  override async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const current = expected === null ? null : await this.inner.get(next.name);
    const r = current?.record;
    const changed = r?.successor !== next.successor && !sameSuccessor(r?.successor, next.successor);
    if (r && r.holder === next.holder && r.term === next.term && changed) {
      throw new LeaseStillHeldError(next.name, `"${next.name}" is held by another process`, undefined);
    }
    return super.put(next, expected, options);
  }
}
describeBoundContract("memory, candidacy refused", async () => ({ store: new RefusesCandidacy(new MemoryStore()) }), {
  refusesCandidacy: "the store lets only the holder write a held lease, as an API before hand-overs",
});

const dir = mkdtempSync(join(tmpdir(), "leasehold-bound-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// On a manual clock, with SQLite's real-time watch hidden (as the elector contract runs it): the
// push path runs in real time in sqlite-push.test.ts.
describeBoundContract("sqlite", async () => {
  const store = new SqliteStore({ path: join(dir, "leases.db") });
  return { store: new StoreWrapper(store, { without: ["watch"] }), dispose: () => store.close() };
});

describe("bound leases: cost", () => {
  it("one process holding 1,000 bound leases writes once per renewal interval", async () => {
    const clock = new ManualClock();
    const tracked = new TrackedStore(new MemoryStore());
    clock.idle = () => tracked.settle();
    const session = openSession({ store: tracked, name: "_sessions/p1", leaseMs: 1000, jitter: 0, clock });
    const electors = Array.from({ length: 1000 }, (_, i) => session.elector({ name: `jobs/lease-${i}` }));
    for (const e of electors) e.start();
    await clock.advance(0);
    expect(electors.filter((e) => e.current.isLeader)).toHaveLength(1000);
    tracked.resetCounts();
    await clock.advance(session.renewMs * 20);
    // 20 renewal intervals: 20 writes (the session record), no reads, whatever the number of leases.
    expect(tracked.counts).toEqual({ get: 0, put: 20, list: 0, getMany: 0 });
    expect(electors.every((e) => e.current.isLeader)).toBe(true);
    await session.close({ release: false });
  });
});

describe("bound leases: options", () => {
  const store = new MemoryStore();
  const refused = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      expect(isLeaseValidationError(error)).toBe(true);
      return (error as Error).message;
    }
    throw new Error("expected a validation error");
  };

  it("names the field and what was expected", async () => {
    expect(refused(() => openSession({ store, name: "Bad Name" }))).toMatch(/name/);
    expect(refused(() => openSession({ store, identity: "a b/c" }))).toMatch(/name.*give name/);
    expect(refused(() => openSession({ store, leaseMs: 1000, renewMs: 950 }))).toMatch(/renewMs/);
    expect(refused(() => openSession({ store, leaseMS: 5 } as never))).toMatch(/leaseMS: unknown field/);
    expect(refused(() => openSession({ store, pollMs: 0 }))).toMatch(/pollMs: expected more than 0 ms/);
    expect(refused(() => openSession({ store, lane: {} as never }))).toMatch(/lane: expected a Lane/);
    const session = openSession({ store, name: "_sessions/opts", leaseMs: 1000 });
    // A protocol record's name is no lease name: the session record cannot be a lease of its own.
    expect(refused(() => session.elector({ name: "_sessions/opts" }))).toMatch(/name: expected 1-192 characters/);
    expect(refused(() => session.elector({ name: "x", metadata: { "leasehold.session": "y@1" } }))).toMatch(
      /metadata\.leasehold\.session: expected no key starting with "leasehold\." or "proxied\.leasehold\."/,
    );
    expect(refused(() => session.elector({ name: "x", metadata: { "proxied.leasehold.next": "y@1 z" } }))).toMatch(
      /metadata\.proxied\.leasehold\.next: expected no key/,
    );
    expect(refused(() => session.elector({ name: "x", handover: "yes" } as never))).toMatch(/handover/);
    session.elector({ name: "x" });
    expect(refused(() => session.elector({ name: "x" }))).toMatch(/one elector per lease/);
    await session.close();
    expect(refused(() => session.elector({ name: "y" }))).toMatch(/closed/);
  });
});

describe("bound leases: one mode per lease name", () => {
  it("a plain Elector never takes over a bound lease from a live session, and says why; it takes it once released", async () => {
    const clock = new ManualClock();
    const tracked = new TrackedStore(new MemoryStore());
    clock.idle = () => tracked.settle();
    const session = openSession({
      store: tracked,
      name: "_sessions/b",
      identity: "b",
      leaseMs: 1000,
      jitter: 0,
      clock,
    });
    const bound = session.elector({ name: "jobs/mixed" });
    bound.start();
    await clock.advance(0);
    await clock.advance(0);
    expect(bound.current.isLeader).toBe(true);
    const plain = new Elector({
      store: tracked,
      name: "jobs/mixed",
      identity: "p",
      leaseMs: 1000,
      jitter: 0,
      clock,
      session: false,
    });
    const errors: string[] = [];
    plain.on("error", ({ error }) => errors.push((error as Error).message));
    const elected: number[] = [];
    plain.on("elected", ({ term }) => elected.push(term));
    plain.start();
    // The bound record is not rewritten while its session renews: by observed time it would look
    // expired after one lease. Five leases later, still one leader.
    await clock.advance(5000);
    expect(bound.current.isLeader).toBe(true);
    expect(plain.current.isLeader).toBe(false);
    expect(elected).toEqual([]);
    expect(errors).toEqual([
      'lease "jobs/mixed" is bound to the process session _sessions/b@1 (a session.elector\'s): an Elector never takes it over, as it cannot tell whether that session lives; use one mode for every candidate of a lease',
    ]);
    await session.close();
    await clock.advance(1000);
    expect(elected).toEqual([2]);
    await plain.stop();
  });
});

describe("bound leases: hand-over on a store that does not push", () => {
  it("the successor leads the handed term within 1.5 polls, however often its session renews (SQLite, push hidden)", async () => {
    const clock = new ManualClock();
    const store = new SqliteStore({ path: join(dir, "handover.db") });
    const tracked = new TrackedStore(new StoreWrapper(store, { without: ["watch"] }));
    clock.idle = () => tracked.settle();
    // The session renews (every 1000 ms) more often than the follower polls (every 1500 ms): a
    // renewal must not restart the follower's poll timer, or it would never read the hand-over.
    // Its looks at a's session stand in for polls: the count of releases there makes it read L.
    const timing = { leaseMs: 3000, renewMs: 1000, retryMs: 1500, pollMs: 1500, jitter: 0, clock } as const;
    const a = openSession({ store: tracked, name: "_sessions/a", identity: "a", ...timing });
    const b = openSession({ store: tracked, name: "_sessions/b", identity: "b", ...timing });
    const ea = a.elector({ name: "jobs/handed" });
    const eb = b.elector({ name: "jobs/handed" });
    const elected: Array<{ at: number; term: number }> = [];
    eb.on("elected", (e) => elected.push({ at: clock.now(), term: e.term }));
    ea.start();
    await clock.advance(0);
    eb.start();
    await clock.advance(5000);
    expect((await store.get("jobs/handed"))?.record.successor?.holder).toBe("b");
    const stopAt = clock.now();
    await ea.stop();
    expect((await store.get("jobs/handed"))?.record).toMatchObject({ holder: "b", term: 2 });
    for (let t = 0; t < 60 && elected.length === 0; t++) await clock.advance(50);
    expect(elected.map((e) => e.term)).toEqual([2]);
    expect(elected[0]!.at - stopAt).toBeLessThanOrEqual(1500 * 1.5);
    await Promise.all([a.close({ release: false }), b.close({ release: false })]);
    store.close();
  });
});

describe("bound leases: the follower's pace and lane are the core's", () => {
  /** Counts reads and writes of one lease name (a session's own calls are not polls of it). */
  class CallsOn extends StoreWrapper {
    reads = 0;
    writes = 0;
    /** Reads of `watched`: the session the lease is bound to, when a follower looks at it. */
    looks = 0;
    /** Monotonic instants of every read of the lease, and of the other records. */
    readTimes: number[] = [];
    lookTimes: number[] = [];
    constructor(
      inner: LeaseStore,
      private readonly lease: string,
      private readonly clock?: ManualClock,
      private readonly watched?: string,
    ) {
      super(inner, { without: ["watch"] });
    }
    override get(name: string, options?: CallOptions): Promise<Stored | null> {
      if (name === this.lease) {
        this.reads++;
        if (this.clock) this.readTimes.push(this.clock.now());
      } else if (name === this.watched) {
        this.looks++;
        if (this.clock) this.lookTimes.push(this.clock.now());
      }
      return super.get(name, options);
    }
    override put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
      if (next.name === this.lease) this.writes++;
      return super.put(next, expected, options);
    }
  }

  it("a waiting follower reads one record a poll (the session its lease is bound to, the lease when that counts a release), asking the lane before each", async () => {
    const clock = new ManualClock();
    const tracked = new TrackedStore(new MemoryStore());
    clock.idle = () => tracked.settle();
    const asked: string[] = [];
    const lane: Lane = {
      admit: (kind) => {
        asked.push(kind);
        return Promise.resolve(() => {});
      },
    };
    const timing = { leaseMs: 1000, renewMs: 300, retryMs: 100, jitter: 0, clock } as const;
    const a = openSession({ store: tracked, name: "_sessions/a", identity: "a", ...timing });
    const bStore = new CallsOn(tracked, "jobs/paced", clock, "_sessions/a");
    const b = openSession({ store: bStore, name: "_sessions/b", identity: "b", ...timing, pollMs: 500, lane });
    const ea = a.elector({ name: "jobs/paced", handover: false });
    const eb = b.elector({ name: "jobs/paced", handover: false });
    const terms: number[] = [];
    eb.on("elected", (e) => terms.push(e.term));
    ea.start();
    await clock.advance(0);
    eb.start();
    await clock.advance(5000);
    // The lease: read once, at start. a's session counts its releases (`releases`), so b's looks
    // at it stand in for polls of the lease: at most one read a poll in all.
    expect(bStore.reads).toBe(1);
    expect(bStore.reads + bStore.looks).toBeLessThanOrEqual(11);
    // a's session is established at 0 and renewed at 300, 600, ...; each look lands 37.5 ms (an
    // eighth of the interval) after a renewal is due, so a crash is first seen that late: every
    // second renewal, the first due more than 3/4 of a poll after the last look.
    const due = [0, ...Array.from({ length: 8 }, (_, i) => 637.5 + 600 * i)];
    expect(bStore.lookTimes).toHaveLength(due.length);
    for (const [i, t] of bStore.lookTimes.entries()) expect(Math.abs(t - due[i]!)).toBeLessThanOrEqual(1); // the clock's ms
    expect(asked).toEqual(Array.from({ length: bStore.reads + bStore.looks }, () => "poll"));
    await a.close();
    await clock.advance(750); // the next look (at most 1.5 polls on) shows the session released
    expect(terms).toEqual([2]);
    // Every read and write of the lease went through the lane (the release of a's session may
    // tell b first, a conflicting acquisition then carries the released record).
    expect(bStore.writes).toBeGreaterThan(0);
    expect(asked.filter((k) => k === "acquire")).toHaveLength(bStore.writes);
    expect(asked.filter((k) => k === "poll")).toHaveLength(bStore.reads + bStore.looks);
    await b.close({ release: false });
  });
  it("a follower of an older leader (its session counts no releases) polls the lease every pollMs", async () => {
    // What leasehold before `releases` writes: the same session record without the count.
    class Older extends StoreWrapper {
      override put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
        const { releases: _releases, ...older } = next;
        return super.put(older, expected, options);
      }
    }
    const clock = new ManualClock();
    const tracked = new TrackedStore(new MemoryStore());
    clock.idle = () => tracked.settle();
    const timing = { leaseMs: 1000, renewMs: 300, retryMs: 100, jitter: 0, clock } as const;
    const a = openSession({
      store: new Older(tracked, { without: ["watch"] }),
      name: "_sessions/a",
      identity: "a",
      ...timing,
    });
    const bStore = new CallsOn(tracked, "jobs/older", clock, "_sessions/a");
    const b = openSession({ store: bStore, name: "_sessions/b", identity: "b", ...timing, pollMs: 500 });
    const ea = a.elector({ name: "jobs/older", handover: false });
    const eb = b.elector({ name: "jobs/older", handover: false });
    ea.start();
    await clock.advance(0);
    eb.start();
    await clock.advance(5000);
    expect((await tracked.get("_sessions/a"))?.record.releases).toBeUndefined();
    // The lease: read at start, then every 500 ms; the session only just after renewals.
    expect(bStore.reads).toBe(11);
    expect(bStore.looks).toBe(9);
    await ea.stop(); // released while a's session stays open: heard at the next poll
    await clock.advance(500);
    expect(eb.current).toMatchObject({ isLeader: true, term: 2 });
    await Promise.all([a.close({ release: false }), b.close({ release: false })]);
  });
});

describe("bound leases: a tenure is judged on reads sent after a lease named it", () => {
  const name = "_sessions/h";
  const observe = () => {
    const clock = new ManualClock();
    const store = new MemoryStore();
    const observer = new SessionObserver({
      store,
      clock,
      maxSkewMs: 0,
      callTimeoutMs: 1000,
      pollMs: 100,
      identity: "f",
    });
    return { clock, store, observer };
  };

  it("a read of the session's earlier term does not end the term a lease names now", async () => {
    // The chaos harness found it (npm run chaos -- --seed 79 --mode bound --backend memory): a
    // follower that had watched h's session 1 stand still for a lease read a lease h had just
    // taken under session 2, judged session 2 on that old read ("an older term for a lease:
    // over") and took the lease while h led it.
    const { clock, store, observer } = observe();
    const first = await store.put(
      makeRecord(name, { holder: "h", term: 1, leaseMs: 1000, renewedAt: clock.wallNow() }),
      null,
    );
    await observer.look(name, clock.now());
    await clock.advance(1000);
    const stale = await observer.look(name, clock.now());
    expect(observer.verdict({ name, term: 1 }, stale, 1000, 0).kind).toBe("expired");
    // h starts session 2 on its own record and takes a lease under it; the follower reads that lease.
    const second = makeRecord(name, { holder: "h", term: 2, leaseMs: 1000, renewedAt: clock.wallNow() });
    await store.put(second, first.revision);
    await clock.advance(10);
    const namedSince = clock.now();
    expect(observer.verdict({ name, term: 2 }, stale, 1000, namedSince)).toEqual({ kind: "live", lookAt: namedSince });
    const fresh = await observer.look(name, namedSince);
    expect(fresh.stored?.record.term).toBe(2);
    expect(observer.verdict({ name, term: 2 }, fresh, 1000, namedSince).kind).toBe("live");
  });

  it("a session record missing from when a lease named it is over a lease later", async () => {
    const { clock, observer } = observe();
    const namedSince = clock.now();
    const missing = await observer.look(name, namedSince);
    expect(observer.verdict({ name, term: 1 }, missing, 1000, namedSince)).toEqual({ kind: "live", lookAt: 1000 });
    await clock.advance(1000);
    const still = await observer.look(name, 1000);
    expect(observer.verdict({ name, term: 1 }, still, 1000, namedSince)).toEqual({ kind: "over" });
  });
});
