/**
 * The default Elector's process session (src/bound/process-sessions.ts, docs/design.md §4 "The
 * process session"), on the manual clock: one session record per process, scope and timing, in a
 * slot a restarted process reuses; a second candidate of one lease on a session of its own; a slot
 * found taken given up for another. A "process" here is a store object of its own over one shared
 * store, as the registry keys sessions by store.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { releaseLease } from "../src/cli/release.js";
import { ManualClock } from "../src/clock.js";
import { LeaseStoreError, StoreContractError } from "../src/errors.js";
import { Elector, type ElectorOptions } from "../src/leader/elector.js";
import type { CallOptions, LeaseRecord, LeaseStore, Revision, Stored } from "../src/lease.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";

const TIMING = { leaseMs: 1000, renewMs: 300, retryMs: 100, pollMs: 250, safetyMs: 100, jitter: 0 };

interface World {
  clock: ManualClock;
  shared: TrackedStore;
  /** A new process: a store object of its own over the shared store (no push: polls only). */
  process(): LeaseStore;
  elector(store: LeaseStore, options: Partial<ElectorOptions> & { name: string }): Elector;
  records(prefix: string): Promise<Array<{ name: string; holder: string | null; term: number }>>;
}

/** A process's store whose puts to one name fail (certainly not applied) while `failing` names it. */
class FailingPuts extends StoreWrapper {
  failing: string | undefined;
  contractBroken = false;
  override put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    if (this.contractBroken && next.name.includes("/_sessions/")) {
      return Promise.reject(new StoreContractError("this store ignores If-None-Match"));
    }
    if (next.name === this.failing) return Promise.reject(new LeaseStoreError("injected", { ambiguous: false }));
    return super.put(next, expected, options);
  }
}

const started: Elector[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((e) => e.stop()));
});

function world(inner: LeaseStore): World {
  const clock = new ManualClock();
  const shared = new TrackedStore(inner);
  clock.idle = () => shared.settle();
  return {
    clock,
    shared,
    process: () => new StoreWrapper(shared, { without: ["watch"] }),
    elector: (store, options) => {
      const e = new Elector({ store, ...TIMING, clock, ...options });
      started.push(e);
      return e;
    },
    records: async (prefix) => {
      const out: Array<{ name: string; holder: string | null; term: number }> = [];
      for await (const l of shared.list!(prefix)) {
        if ("record" in l) out.push({ name: l.record.name, holder: l.record.holder, term: l.record.term });
      }
      return out;
    },
  };
}

describe.each([
  ["memory", () => new MemoryStore()],
  ["sqlite", () => new SqliteStore({ path: ":memory:" })],
] as const)("the process session on %s", (_backend, make) => {
  it("a process's Electors share one session record: one write per renewal interval for all their leases", async () => {
    const w = world(make());
    const p = w.process();
    const electors = Array.from({ length: 20 }, (_, i) => w.elector(p, { name: `jobs/lease-${i}` }));
    for (const e of electors) e.start();
    await w.clock.advance(0);
    expect(electors.every((e) => e.current.isLeader)).toBe(true);
    expect(new Set(electors.map((e) => e.identity)).size).toBe(1);
    w.shared.resetCounts();
    const from = w.shared.written.length;
    await w.clock.advance(3000);
    // Ten renewal intervals: ten writes, all of the one session record; the leases are not written.
    expect(w.shared.counts.put).toBe(10);
    expect(new Set(w.shared.written.slice(from).map((r) => r.name))).toEqual(new Set(["jobs/_sessions/slot-0"]));
    expect(electors.every((e) => e.current.isLeader)).toBe(true);
    const leases = (await w.records("jobs/")).filter((r) => !r.name.includes("_sessions"));
    expect(leases.every((r) => r.term === 1 && r.holder === electors[0]!.identity)).toBe(true);
  });

  it("the session lies in the lease's scope; another scope or timing is another session", async () => {
    const w = world(make());
    const p = w.process();
    const a = w.elector(p, { name: "jobs/a" });
    const b = w.elector(p, { name: "top" });
    const c = w.elector(p, { name: "jobs/c", leaseMs: 2000 });
    for (const e of [a, b, c]) e.start();
    await w.clock.advance(0);
    expect([a, b, c].map((e) => e.current.isLeader)).toEqual([true, true, true]);
    const sessions = (await w.records("")).filter((r) => r.name.includes("_sessions/")).map((r) => r.name);
    expect(sessions.sort()).toEqual(["_sessions/slot-0", "jobs/_sessions/slot-0", "jobs/_sessions/slot-1"]);
  });

  it("a second candidate of one lease in the process gets its own identity and session; a graceful stop hands over at term + 1, led as handed", async () => {
    const w = world(make());
    const p = w.process();
    const a = w.elector(p, { name: "jobs/one" });
    const b = w.elector(p, { name: "jobs/one" });
    expect(b.identity).toBe(`${a.identity}-2`);
    const elected: Array<[string, number]> = [];
    a.on("elected", ({ term }) => elected.push(["a", term]));
    b.on("elected", ({ term }) => elected.push(["b", term]));
    a.start();
    await w.clock.advance(0);
    b.start();
    await w.clock.advance(300);
    await a.stop();
    await w.clock.advance(TIMING.pollMs);
    expect(elected).toEqual([
      ["a", 1],
      ["b", 2],
    ]);
    const lease = (await w.shared.get("jobs/one"))!.record;
    expect(lease).toMatchObject({ holder: b.identity, term: 2, session: { name: "jobs/_sessions/slot-1" } });
  });

  it("a process that stops releases its slot, and the next process reuses it: records stay as many as processes at once", async () => {
    const w = world(make());
    for (let round = 0; round < 5; round++) {
      const e = w.elector(w.process(), { name: "jobs/cron", identity: `run-${round}` });
      e.start();
      await w.clock.advance(0);
      expect(e.current.isLeader).toBe(true);
      await e.stop();
      await w.clock.advance(10);
    }
    const records = await w.records("jobs/");
    expect(records.map((r) => r.name).sort()).toEqual(["jobs/_sessions/slot-0", "jobs/cron"]);
    expect(records.find((r) => r.name === "jobs/cron")).toMatchObject({ holder: null, term: 5 });
  });

  it("a slot held by a live process is skipped; two processes opening one slot at once end on two", async () => {
    const w = world(make());
    const first = w.elector(w.process(), { name: "jobs/a", identity: "p1" });
    const second = w.elector(w.process(), { name: "jobs/b", identity: "p2" });
    // Both start at the same instant: both find slot-0 free; one establishes it, the other finds
    // it taken and moves.
    first.start();
    second.start();
    await w.clock.advance(TIMING.retryMs * 3);
    expect([first.current.isLeader, second.current.isLeader]).toEqual([true, true]);
    const third = w.elector(w.process(), { name: "jobs/c", identity: "p3" });
    third.start();
    await w.clock.advance(TIMING.retryMs * 3);
    expect(third.current.isLeader).toBe(true);
    const sessions = (await w.records("jobs/_sessions/")).map((r) => `${r.name} ${r.holder}`);
    expect(sessions.sort()).toEqual(
      expect.arrayContaining([expect.stringMatching(/slot-0/), expect.stringMatching(/slot-1/)]),
    );
    expect(new Set(sessions.map((s) => s.split(" ")[1])).size).toBe(3);
    expect(sessions).toHaveLength(3);
  });

  it("stop({ release: false }) of a process's last Elector lets the lease run out with its session; another process then takes it at term + 1", async () => {
    const w = world(make());
    const a = w.elector(w.process(), { name: "jobs/x", identity: "a" });
    const b = w.elector(w.process(), { name: "jobs/x", identity: "b" });
    a.start();
    await w.clock.advance(0);
    b.start();
    await w.clock.advance(100);
    const stoppedAt = w.clock.now();
    await a.stop({ release: false });
    await w.clock.advance(TIMING.retryMs);
    expect(b.current.isLeader).toBe(false);
    expect((await w.shared.get("jobs/x"))!.record).toMatchObject({ holder: "a", term: 1 });
    await w.clock.advance(TIMING.leaseMs + Math.max(TIMING.pollMs, TIMING.retryMs) * 2);
    expect(b.current).toMatchObject({ isLeader: true, term: 2 });
    expect(w.clock.now() - stoppedAt).toBeGreaterThanOrEqual(TIMING.leaseMs);
  });

  it("a release counts on a session others still use, not on one that closes: followers hear of it either way", async () => {
    const w = world(make());
    const p = w.process();
    const keep = w.elector(p, { name: "jobs/keep" });
    const y = w.elector(p, { name: "jobs/y" });
    keep.start();
    y.start();
    await w.clock.advance(100);
    const sessionOf = async () => (await w.shared.get("jobs/_sessions/slot-0"))!.record;
    expect((await sessionOf()).releases).toBe(0);
    // One of two: the session stays, and counts the release (one write of it, at once).
    const before = w.shared.written.length;
    await y.stop();
    await w.clock.advance(0);
    const wrote = w.shared.written.slice(before).map((r) => [r.name, r.holder, r.releases]);
    expect(wrote).toEqual([
      ["jobs/y", null, undefined],
      ["jobs/_sessions/slot-0", (await sessionOf()).holder, 1],
    ]);
    // The last one: the session's own release says it all, with no count written before it.
    const last = w.shared.written.length;
    await keep.stop();
    await w.clock.advance(0);
    const closing = w.shared.written.slice(last).map((r) => [r.name, r.holder, r.releases]);
    expect(closing).toEqual([
      ["jobs/keep", null, undefined],
      ["jobs/_sessions/slot-0", null, 1],
    ]);
  });

  it("stop({ release: false }) on a session others still use hands over or releases all the same (the lease would stay held)", async () => {
    const w = world(make());
    const p = w.process();
    const keep = w.elector(p, { name: "jobs/keep" });
    const a = w.elector(p, { name: "jobs/y" });
    const b = w.elector(w.process(), { name: "jobs/y", identity: "b" });
    keep.start();
    a.start();
    await w.clock.advance(0);
    b.start();
    await w.clock.advance(300);
    await a.stop({ release: false });
    // b hears of it at its next look at p's session (which counts the release): within 1.5 polls.
    await w.clock.advance(TIMING.pollMs * 1.5);
    expect(b.current).toMatchObject({ isLeader: true, term: 2 });
    expect(keep.current.isLeader).toBe(true);
  });
});

describe("a rolling deploy: renewing Electors (leasehold before sessions) and default ones on one lease", () => {
  it("a default Elector takes a renewing leader's lease at its release, and by observed time after a crash", async () => {
    const w = world(new MemoryStore());
    const old = w.elector(w.process(), { name: "jobs/roll", identity: "old", session: false });
    const next = w.elector(w.process(), { name: "jobs/roll", identity: "new" });
    old.start();
    await w.clock.advance(0);
    next.start();
    await w.clock.advance(1000);
    expect([old.current.isLeader, next.current.isLeader]).toEqual([true, false]);
    await old.stop(); // released
    await w.clock.advance(TIMING.pollMs);
    expect(next.current).toMatchObject({ isLeader: true, term: 2 });

    const old2 = w.elector(w.process(), { name: "jobs/roll2", identity: "old2", session: false });
    const next2 = w.elector(w.process(), { name: "jobs/roll2", identity: "new2" });
    old2.start();
    await w.clock.advance(0);
    next2.start();
    await w.clock.advance(300);
    await old2.stop({ release: false }); // as a crash: the record stays, unrenewed
    await w.clock.advance(TIMING.leaseMs - 200);
    expect(next2.current.isLeader).toBe(false);
    await w.clock.advance(TIMING.pollMs * 2);
    expect(next2.current).toMatchObject({ isLeader: true, term: 2 });
  });

  it("a renewing Elector never takes a lease a live session holds, says why, and takes it once released", async () => {
    const w = world(new MemoryStore());
    const next = w.elector(w.process(), { name: "jobs/roll", identity: "new" });
    const old = w.elector(w.process(), { name: "jobs/roll", identity: "old", session: false });
    const errors: string[] = [];
    old.on("error", ({ error }) => errors.push(String(error)));
    next.start();
    await w.clock.advance(0);
    old.start();
    await w.clock.advance(TIMING.leaseMs * 5);
    expect([next.current.isLeader, old.current.isLeader]).toEqual([true, false]);
    expect(errors.some((e) => e.includes("is bound to the process session"))).toBe(true);
    await next.stop(); // no successor registered (a renewing Elector does not register): released
    await w.clock.advance(TIMING.pollMs);
    expect(old.current).toMatchObject({ isLeader: true, term: 2 });
  });
});

describe("the process session's lifecycle (what a review found)", () => {
  it("a release that fails on a session others still renew does not strand the lease: the session is ended and claimed anew", async () => {
    const w = world(new MemoryStore());
    const p = new FailingPuts(w.shared, { without: ["watch"] });
    const keep = w.elector(p, { name: "jobs/keep" });
    const a = w.elector(p, { name: "jobs/x" });
    const b = w.elector(w.process(), { name: "jobs/x", identity: "b" });
    keep.start();
    a.start();
    await w.clock.advance(0);
    b.start();
    await w.clock.advance(300);
    p.failing = "jobs/x"; // a's hand-over or release, and the retry after it, all fail
    const stopping = a.stop();
    await w.clock.advance(TIMING.leaseMs);
    await stopping;
    p.failing = undefined;
    await w.clock.advance(TIMING.leaseMs * 3);
    expect(b.current).toMatchObject({ isLeader: true });
    expect(keep.current.isLeader).toBe(true); // campaigned again on a new session
  });

  it("stop({ release: false }) decides after the leader's work drained: an Elector that joined meanwhile keeps the session, so the lease is released", async () => {
    const w = world(new MemoryStore());
    const p = w.process();
    const a = w.elector(p, { name: "jobs/x" });
    const other = w.elector(w.process(), { name: "jobs/x", identity: "b", session: false });
    a.start();
    await w.clock.advance(0);
    other.start();
    let finish!: () => void;
    a.trackWork(new Promise<void>((resolve) => (finish = resolve)));
    const stopping = a.stop({ release: false, graceMs: 5000 });
    await w.clock.advance(50);
    const joined = w.elector(p, { name: "jobs/m" }); // same session, starts during the drain
    joined.start();
    await w.clock.advance(50);
    finish();
    await stopping;
    await w.clock.advance(TIMING.pollMs * 2);
    expect(other.current).toMatchObject({ isLeader: true, term: 2 });
    expect(joined.current.isLeader).toBe(true);
  });

  it("every Elector of a session stopping at once with release: false leaves its lease to run out with the session", async () => {
    const w = world(new MemoryStore());
    const p = w.process();
    const x = w.elector(p, { name: "jobs/x" });
    const y = w.elector(p, { name: "jobs/y" });
    x.start();
    y.start();
    await w.clock.advance(0);
    await Promise.all([x.stop({ release: false }), y.stop({ release: false })]);
    const records = await w.records("jobs/");
    expect(records.filter((r) => r.holder !== null).map((r) => r.name)).toEqual([
      "jobs/_sessions/slot-0",
      "jobs/x",
      "jobs/y",
    ]);
  });

  it("two store objects of one process with the same identity take two slots and both lead", async () => {
    const w = world(new MemoryStore());
    const a = w.elector(w.process(), { name: "jobs/a", identity: "host-1" });
    const b = w.elector(w.process(), { name: "jobs/b", identity: "host-1" });
    a.start();
    b.start();
    await w.clock.advance(TIMING.retryMs * 3);
    expect([a.current.isLeader, b.current.isLeader]).toEqual([true, true]);
    const sessions = (await w.records("jobs/_sessions/")).map((r) => r.name);
    expect(sessions).toEqual(["jobs/_sessions/slot-0", "jobs/_sessions/slot-1"]);
  });

  it("Electors stopped before their session was opened leave no slot behind", async () => {
    const w = world(new MemoryStore());
    const p = w.process();
    for (let i = 0; i < 3; i++) {
      const e = w.elector(p, { name: `jobs/quick-${i}` });
      e.start(); // the slot is being read when it stops
      await e.stop();
    }
    const e = w.elector(p, { name: "jobs/after" });
    e.start();
    await w.clock.advance(0);
    expect(e.current.isLeader).toBe(true);
    expect((await w.records("jobs/_sessions/")).map((r) => r.name)).toEqual(["jobs/_sessions/slot-0"]);
  });

  it("a store that breaks the contract on the session's write stops a default Elector, as it stops a renewing one", async () => {
    const w = world(new MemoryStore());
    const p = new FailingPuts(w.shared, { without: ["watch"] });
    p.contractBroken = true;
    const e = w.elector(p, { name: "jobs/x" });
    const errors: unknown[] = [];
    e.on("error", ({ error }) => errors.push(error));
    e.start();
    await w.clock.advance(TIMING.retryMs * 5);
    expect(e.current.phase).toBe("stopped");
    expect(errors.length).toBeLessThanOrEqual(2);
  });

  it("an operator's release of one bound lease makes its holder step down from all of them, and gives away only that one before it has", async () => {
    const w = world(new MemoryStore());
    const pa = w.process();
    const a1 = w.elector(pa, { name: "jobs/a" });
    const a2 = w.elector(pa, { name: "jobs/b" });
    const pb = w.process();
    const b1 = w.elector(pb, { name: "jobs/a", identity: "b" });
    const b2 = w.elector(pb, { name: "jobs/b", identity: "b" });
    a1.start();
    a2.start();
    await w.clock.advance(0);
    b1.start();
    b2.start();
    await w.clock.advance(100);
    const overlaps: string[] = [];
    const check = () => {
      if (a1.current.isLeader && b1.current.isLeader) overlaps.push(`jobs/a at ${w.clock.now()}`);
      if (a2.current.isLeader && b2.current.isLeader) overlaps.push(`jobs/b at ${w.clock.now()}`);
    };
    await releaseLease(w.shared, "jobs/a", a1.identity, 1);
    for (let t = 0; t < TIMING.leaseMs * 4; t += 10) {
      await w.clock.advance(10);
      check();
    }
    // The named lease may overlap until A's next renewal (what the fencing token is for); the other never.
    expect(overlaps.filter((o) => o.startsWith("jobs/b"))).toEqual([]);
    expect(b1.current.isLeader).toBe(true);
    // A stepped down from both at its next renewal, then campaigned again for jobs/b under a new session term.
    expect(a1.current.isLeader).toBe(false);
    expect(a2.current.isLeader || b2.current.isLeader).toBe(true);
  });
});
