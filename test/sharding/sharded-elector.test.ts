/**
 * The sharded elector on the manual clock (docs/sharding.md): balance, joins, graceful leaves,
 * crashes, flapping members, session lapses, restarts under the same identity. The harness checks
 * after every timer that no bucket has two members inside their safe windows and that every
 * bucket's terms only grow (group-harness.ts).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/backends/memory/store.js";
import { ManualClock } from "../../src/clock.js";
import { memberName } from "../../src/sharding/layout.js";
import { runSharded } from "../../src/sharding/run-sharded.js";
import { Group, TIMING } from "./group-harness.js";

const { leaseMs, settleMs } = TIMING;

describe("sharded elector", () => {
  it("one member owns every bucket", async () => {
    const g = new Group(8);
    g.join("a");
    await g.until(() => g.balanced(["a"]), 1000);
    expect(g.loads(["a"])).toEqual([8]);
    expect(g.assignments.map((a) => a.kind)).toEqual(new Array(8).fill("fresh"));
    expect(g.assignments.every((a) => a.term === 1)).toBe(true);
    expect(g.violations).toEqual([]);
  });

  it("a second member joins and gets floor or ceil of N/2 by hand-off, no bucket ever held twice", async () => {
    const g = new Group(9);
    g.join("a");
    await g.until(() => g.balanced(["a"]), 1000);
    const joinedAt = g.clock.now();
    g.join("b");
    await g.until(() => g.balanced(["a", "b"]), settleMs + 10 * leaseMs);
    expect(g.loads(["a", "b"]).sort()).toEqual([4, 5]);
    const moves = g.assignments.filter((a) => a.at >= joinedAt);
    // Only the joiner's share moved, each to it by hand-off with the next term.
    expect(moves.every((m) => m.member === "b" && m.kind === "handoff" && m.term === 2)).toBe(true);
    expect(moves.length).toBe(g.loads(["b"])[0]);
    // Nothing moved before the view had been stable for the settle period.
    expect(Math.min(...moves.map((m) => m.at))).toBeGreaterThanOrEqual(joinedAt + settleMs);
    expect(g.violations).toEqual([]);
  });

  it("a graceful leave stops every bucket's work, then frees them all in one write before it returns", async () => {
    const g = new Group(8);
    g.join("a");
    const b = g.join("b");
    await g.until(() => g.balanced(["a", "b"]), settleMs + 10 * leaseMs);
    const writesBefore = g.network.applied.length;
    b.leave.abort();
    await g.settle(b.done, leaseMs);
    const leftAt = g.clock.now();
    // Before it returned: no work of its own still running, its session released (holder null).
    expect(b.working.size).toBe(0);
    expect(g.inside(b)).toEqual([]);
    const record = await g.store.get(memberName("g", "b"));
    expect(record?.record.holder).toBeNull();
    expect(g.network.applied.slice(writesBefore).filter((w) => w.sender === "b")).toHaveLength(1);
    await g.until(() => g.balanced(["a"]), 3 * TIMING.pollMs);
    const takenOver = g.assignments.filter((x) => x.at >= leftAt);
    expect(takenOver).toHaveLength(4);
    for (const x of takenOver) {
      const before = g.assignments.filter((y) => y.bucket === x.bucket && y.at < leftAt).at(-1);
      expect(before?.member).toBe("b");
      expect([x.member, x.term]).toEqual(["a", before!.term + 1]);
    }
    expect(g.violations).toEqual([]);
  });

  it("a crash is absorbed once the crashed member's session has run out, never before", async () => {
    const g = new Group(8);
    g.join("a");
    const b = g.join("b");
    await g.until(() => g.balanced(["a", "b"]), settleMs + 10 * leaseMs);
    const until = b.elector.current.sessionUntil!;
    const crashedAt = g.clock.now();
    b.process.crash();
    await g.until(() => g.balanced(["a"]), 3 * leaseMs);
    const takeovers = g.assignments.filter((x) => x.at >= crashedAt);
    expect(takeovers).toHaveLength(4);
    expect(takeovers.every((x) => x.kind === "takeover" && x.member === "a")).toBe(true);
    // After b's window closed plus its safety margin: a watched b's record expire on its own clock.
    expect(Math.min(...takeovers.map((x) => x.at))).toBeGreaterThanOrEqual(until + TIMING.safetyMs);
    expect(g.violations).toEqual([]);
  });

  it("a flapping member moves no bucket back and forth; once it stays, it gets its share", async () => {
    const g = new Group(8);
    g.join("a");
    g.join("b");
    await g.until(() => g.balanced(["a", "b"]), settleMs + 10 * leaseMs);
    const stableAt = g.clock.now();
    for (let cycle = 0; cycle < 6; cycle++) {
      const c = g.join("c", {}, `c#${cycle}`);
      await g.clock.advance(settleMs / 2);
      c.leave.abort();
      await g.settle(c.done, leaseMs);
      await g.clock.advance(settleMs / 4);
    }
    expect(g.assignments.filter((x) => x.at >= stableAt)).toEqual([]);
    expect(g.revocations.filter((x) => x.at >= stableAt)).toEqual([]);
    expect(g.balanced(["a", "b"])).toBe(true);
    g.join("c", {}, "c#last");
    await g.until(() => g.balanced(["a", "b", "c#last"]), settleMs + 10 * leaseMs);
    expect(g.loads(["a", "b", "c#last"]).sort()).toEqual([2, 3, 3]);
    expect(g.violations).toEqual([]);
  });

  it("a paused owner (clock jump, no timer run) sees stillLeader() false for every bucket at once", async () => {
    const g = new Group(4);
    const contexts: Array<{ stillLeader: () => boolean; signal: AbortSignal }> = [];
    const a = g.join("a");
    a.elector.on("assigned", (e) => contexts.push(e));
    await g.until(() => g.balanced(["a"]), 1000);
    expect(contexts.map((c) => c.stillLeader())).toEqual([true, true, true, true]);
    const until = a.elector.current.sessionUntil!;
    g.clock.jump(until - g.clock.now());
    expect(a.elector.current.session).toBeUndefined();
    expect(contexts.map((c) => c.signal.aborted)).toEqual([false, false, false, false]);
    // The first check ends the session and every bucket's work, before any timer has run.
    expect(contexts[0]!.stillLeader()).toBe(false);
    expect(contexts.map((c) => c.signal.aborted)).toEqual([true, true, true, true]);
    expect(contexts.map((c) => c.stillLeader())).toEqual([false, false, false, false]);
    expect(contexts[0]!.signal.reason).toMatchObject({ name: "BucketLostError", revoked: "session-expired" });
  });

  it("a member cut off from the store loses its buckets when its window closes, then re-establishes them by CAS", async () => {
    const g = new Group(4);
    const a = g.join("a");
    await g.until(() => g.balanced(["a"]), 1000);
    g.network.partition(a.process.label, true);
    await g.until(() => g.inside(a).length === 0, leaseMs);
    expect(g.revocations.map((r) => r.reason)).toEqual(new Array(4).fill("session-expired"));
    await g.clock.advance(leaseMs);
    g.network.partition(a.process.label, false);
    await g.until(() => g.balanced(["a"]), 3 * leaseMs);
    const again = g.assignments.slice(4);
    expect(again.map((x) => [x.kind, x.term])).toEqual(new Array(4).fill(["reestablish", 2]));
    expect(a.elector.current.session).toBe(2);
    expect(g.violations).toEqual([]);
  });

  it("a member cut off while another lives: the other fences its session and takes over; it comes back and gets its share", async () => {
    const g = new Group(6);
    g.join("a");
    const b = g.join("b");
    await g.until(() => g.balanced(["a", "b"]), settleMs + 10 * leaseMs);
    const cutAt = g.clock.now();
    g.network.partition(b.process.label, true);
    await g.until(() => g.balanced(["a"]), 4 * leaseMs);
    const fenced = await g.store.get(memberName("g", "b"));
    expect(fenced?.record).toMatchObject({ holder: null, metadata: { fenced: "a" } });
    expect(g.assignments.filter((x) => x.at >= cutAt).every((x) => x.kind === "takeover")).toBe(true);
    g.network.partition(b.process.label, false);
    await g.until(() => g.balanced(["a", "b"]), settleMs + 10 * leaseMs);
    expect(b.elector.current.session).toBe(2);
    expect(g.violations).toEqual([]);
  });

  it("a restart under the same identity waits out the crashed process's session before taking its buckets", async () => {
    const g = new Group(4);
    const first = g.join("a", {}, "a#1");
    await g.until(() => g.balanced(["a#1"]), 1000);
    const until = first.elector.current.sessionUntil!;
    first.process.crash();
    const restartedAt = g.clock.now();
    g.join("a", {}, "a#2");
    await g.until(() => g.balanced(["a#2"]), 4 * leaseMs);
    const again = g.assignments.filter((x) => x.at >= restartedAt);
    expect(again.every((x) => x.member === "a#2" && x.term === 2)).toBe(true);
    expect(Math.min(...again.map((x) => x.at))).toBeGreaterThanOrEqual(until + TIMING.safetyMs);
    expect(g.violations).toEqual([]);
  });

  it("runSharded rejects with the error a bucket's fn threw, after leaving the group", async () => {
    const clock = new ManualClock();
    const store = new MemoryStore();
    let calls = 0;
    const run = runSharded({ store, group: "g", buckets: 3, identity: "a", clock, ...TIMING }, async ({ bucket }) => {
      calls++;
      if (bucket === 1) throw new Error("bucket 1 broke");
      await clock.sleep(60_000);
    });
    const outcome = run.then(
      () => "resolved",
      (error: Error) => error.message,
    );
    for (let i = 0; i < 50 && calls < 3; i++) await clock.advance(10);
    await clock.advance(TIMING.graceMs + 10);
    expect(await outcome).toBe("bucket 1 broke");
    expect((await store.get(memberName("g", "a")))?.record.holder).toBeNull();
  });
});
