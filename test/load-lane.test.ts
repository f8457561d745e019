/**
 * The load lane's decisions on a manual clock (docs/design.md §4, renewals first): on time it admits
 * at once; late, polls and acquisitions wait, each within its bound; at most maxInFlight follower
 * calls are out, acquisitions ahead of polls. A late loop is made by `clock.jump`: the sampler's
 * timer then wakes after its due time, as it does behind a blocked or starved event loop.
 */
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { ManualClock } from "../src/clock.js";
import { type LaneKind, type LaneRelease, LoadLane, openLane, processLane } from "../src/elector/load-lane.js";
import { LeaseValidationError } from "../src/errors.js";
import { Elector } from "../src/leader/elector.js";
import type { LeaseStore } from "../src/lease.js";
import { ElectorMetrics } from "../src/metrics/elector.js";

function setup(options: ConstructorParameters<typeof LoadLane>[0] = {}) {
  const clock = new ManualClock();
  const lane = new LoadLane({ clock, random: () => 0, ...options });
  /** Asks for admission; `got` holds the release once admitted. */
  const ask = (kind: LaneKind, signal?: AbortSignal) => {
    const ticket: { got: LaneRelease | undefined; at: number | undefined } = { got: undefined, at: undefined };
    void lane.admit(kind, signal).then((release) => {
      ticket.got = release;
      ticket.at = clock.now();
    });
    return ticket;
  };
  /** The loop stalls for `ms` (the sampler's timer wakes that late), then runs on for a moment. */
  const stall = async (ms: number) => {
    clock.jump(ms);
    await clock.advance(0);
  };
  /** One call admitted and settled at once: the sampler starts. */
  const once = async (kind: LaneKind = "poll") => (await lane.admit(kind))();
  return { clock, lane, ask, stall, once };
}

describe("load lane", () => {
  it("admits at once while the loop is on time", async () => {
    const { clock, lane, ask } = setup();
    const poll = ask("poll");
    const acquire = ask("acquire");
    await clock.advance(0);
    expect([poll.at, acquire.at]).toEqual([0, 0]);
    await clock.advance(1000);
    expect(lane.stats()).toMatchObject({
      admitted: { poll: 1, acquire: 1 },
      shed: { poll: 0, acquire: 0 },
      inFlight: 2,
      latenessMs: 0,
      late: false,
    });
    poll.got?.();
    poll.got?.(); // idempotent
    expect(lane.stats().inFlight).toBe(1);
  });

  it("measures lateness as the p99 of the window and forgets it once the window has passed", async () => {
    const { clock, lane, stall, once } = setup({ lateMs: 100, windowMs: 3000 });
    await once();
    await clock.advance(500);
    await stall(400); // the sampler's 100 ms timer wakes 300 ms late
    expect(lane.stats().latenessMs).toBe(300);
    expect(lane.late).toBe(true);
    await clock.advance(2900);
    expect(lane.late).toBe(true);
    await clock.advance(200);
    expect(lane.stats()).toMatchObject({ latenessMs: 0, late: false });
  });

  it("late: a poll waits, at most maxPollDelayMs (jittered from half of it)", async () => {
    const { clock, lane, ask, stall, once } = setup({ maxPollDelayMs: 2000 });
    await once();
    await stall(400);
    // Keep the loop late: a stall every second.
    const since = clock.now();
    const poll = ask("poll");
    await clock.advance(600);
    await stall(300); // still late
    await clock.advance(99);
    expect(poll.at).toBeUndefined();
    await clock.advance(1);
    // random() = 0: released at half the bound, late or not.
    expect((poll.at ?? 0) - since).toBe(1000);
    expect(lane.stats()).toMatchObject({ shed: { poll: 1 }, overdue: { poll: 1 }, admitted: { poll: 2 } });
  });

  it("late: a poll goes as soon as the loop is on time again, before its bound", async () => {
    const { clock, lane, ask, stall, once } = setup({ maxPollDelayMs: 60_000, windowMs: 1000 });
    await once();
    await stall(400);
    const since = clock.now();
    const poll = ask("poll");
    await clock.advance(900);
    expect(poll.at).toBeUndefined();
    await clock.advance(300);
    expect(poll.at).toBeDefined();
    expect((poll.at ?? 0) - since).toBeLessThanOrEqual(1200);
    expect(lane.stats()).toMatchObject({ shed: { poll: 1 }, overdue: { poll: 0 } });
  });

  it("late: an acquisition waits a jittered time within maxAcquireDelayMs", async () => {
    for (const [random, expected] of [
      [0, 500],
      [0.5, 750],
      [0.999, 999.5],
    ] as const) {
      const { clock, ask, stall, once } = setup({ maxAcquireDelayMs: 1000, random: () => random });
      await once();
      await stall(400);
      const since = clock.now();
      const acquire = ask("acquire");
      await clock.advance(1000);
      expect((acquire.at ?? Number.NaN) - since).toBe(expected);
    }
  });

  it("caps the follower calls in flight; acquisitions go ahead of polls", async () => {
    const { clock, lane, ask } = setup({ maxInFlight: 2 });
    const [a, b, c] = [ask("poll"), ask("poll"), ask("poll")];
    await clock.advance(0);
    expect([a.at, b.at, c.at]).toEqual([0, 0, undefined]);
    const take = ask("acquire");
    await clock.advance(10);
    expect(take.at).toBeUndefined();
    a.got?.();
    await clock.advance(0);
    expect([take.at, c.at]).toEqual([10, undefined]); // the acquisition took the free place
    b.got?.();
    await clock.advance(0);
    expect(c.at).toBe(10);
    expect(lane.stats()).toMatchObject({ inFlight: 2, queued: { poll: 1, acquire: 1 }, waiting: 0 });
  });

  it("an acquisition that waited its whole bound goes out even over the cap; polls never do", async () => {
    const { clock, lane, ask } = setup({
      maxInFlight: 1,
      maxAcquireDelayMs: 1000,
      maxPollDelayMs: 1000,
      sampleMs: 1000,
    });
    const first = ask("poll");
    const poll = ask("poll");
    const take = ask("acquire");
    await clock.advance(999);
    expect([first.at, poll.at, take.at]).toEqual([0, undefined, undefined]);
    await clock.advance(1);
    expect(take.at).toBe(1000);
    await clock.advance(60_000);
    expect(poll.at).toBeUndefined();
    expect(lane.stats()).toMatchObject({ inFlight: 2, waiting: 1 });
    first.got?.();
    take.got?.();
    await clock.advance(0);
    expect(poll.at).toBe(61_000);
  });

  it("an aborted wait resolves at once and takes no place", async () => {
    const { clock, lane, ask, stall, once } = setup();
    await once();
    await stall(400);
    const cut = new AbortController();
    const poll = ask("poll", cut.signal);
    await clock.advance(100);
    expect(poll.at).toBeUndefined();
    cut.abort();
    await clock.advance(0);
    expect(poll.at).toBe(clock.now());
    expect(lane.stats()).toMatchObject({ admitted: { poll: 1 }, waiting: 0, inFlight: 0 });
    // A signal that outlives many admissions keeps no listener of those admitted.
    const campaign = new AbortController();
    const held = ask("poll", campaign.signal);
    await clock.advance(2000);
    expect(held.at).toBeDefined();
    expect(getEventListeners(campaign.signal, "abort")).toHaveLength(0);
    const already = ask("poll", cut.signal);
    await clock.advance(0);
    expect(already.at).toBe(clock.now());
  });

  it("samples only while asked: the timer stops idleMs after the last admission", async () => {
    const { clock, lane, once } = setup({ idleMs: 5000, sampleMs: 100 });
    expect(clock.pending).toBe(0);
    await once();
    await clock.advance(4000);
    expect(clock.pending).toBe(1);
    await clock.advance(1200);
    expect(clock.pending).toBe(0);
    expect(lane.stats().latenessMs).toBe(0);
    await once();
    expect(clock.pending).toBe(1);
  });

  it("refuses options that cannot be right, naming the field", () => {
    const refused = (options: Record<string, unknown>) => {
      try {
        new LoadLane(options as never);
      } catch (error) {
        expect(error).toBeInstanceOf(LeaseValidationError);
        return [...new Set((error as LeaseValidationError).issues.map((i) => i.path))];
      }
      throw new Error("expected a refusal");
    };
    expect(refused({ maxInFlight: 0 })).toEqual(["maxInFlight"]);
    expect(refused({ maxInFlight: 1.5, lateMs: -1 })).toEqual(["maxInFlight", "lateMs"]);
    expect(refused({ maxPollDelay: 5 })).toEqual(["maxPollDelay"]);
  });
});

describe("the elector's lane", () => {
  const memory = new MemoryStore();
  // Without the memory store's push: a follower learns only by polling.
  const store: LeaseStore = { get: (name) => memory.get(name), put: (next, expected) => memory.put(next, expected) };

  it("is the process lane on the system clock, open on a test clock, or the one given", () => {
    expect(new Elector({ store, name: "lane/a" }).lane).toBe(processLane());
    expect(new Elector({ store, name: "lane/a", clock: new ManualClock() }).lane).toBe(openLane);
    const lane = new LoadLane();
    expect(new Elector({ store, name: "lane/a", lane }).lane).toBe(lane);
    expect(() => new Elector({ store, name: "lane/a", lane: {} as never })).toThrow(
      /lane: expected a Lane \(an object with admit\)/,
    );
  });

  it("a follower's poll is held back while the loop is late; the leader renews regardless", async () => {
    const { clock, lane, stall } = setup({ maxPollDelayMs: 4000 });
    const options = { store, clock, lane, leaseMs: 3000, retryMs: 300 };
    const leader = new Elector({ ...options, name: "lane/b", identity: "leader" });
    const follower = new Elector({ ...options, name: "lane/b", identity: "follower" });
    let renewals = 0;
    leader.on("renewed", () => renewals++);
    leader.start();
    await clock.advance(10);
    expect(leader.current.isLeader).toBe(true);
    follower.start();
    await clock.advance(10);
    const before = lane.stats();
    for (let i = 0; i < 4; i++) {
      await stall(300);
      await clock.advance(700);
    }
    const after = lane.stats();
    expect(after.late).toBe(true);
    expect(after.shed.poll).toBeGreaterThan(before.shed.poll);
    // Without the lane: (4 s of polls every 300 ms) about 13; held back by half of 4 s each: at most 3.
    expect(after.admitted.poll - before.admitted.poll).toBeLessThanOrEqual(3);
    expect(leader.current.isLeader).toBe(true);
    expect(renewals).toBeGreaterThanOrEqual(3);
    expect(follower.current.holder).toBe("leader");
    const stopped = Promise.all([follower.stop(), leader.stop()]);
    await clock.advance(5000); // the follower may be waiting for admission (at most its bound)
    await stopped;
  });

  it("elector metrics show the lane's counters once, however many electors share it", async () => {
    const { clock, lane, stall } = setup();
    const metrics = new ElectorMetrics(clock);
    for (const identity of ["a", "b"]) {
      metrics.track(new Elector({ store, clock, lane, name: "lane/c", identity }));
    }
    await lane.admit("poll").then((release) => release());
    await stall(400);
    const text = metrics.render();
    expect(text).toContain('leasehold_lane_admitted_total{lane="0",kind="poll"} 1\n');
    expect(text).toContain('leasehold_lane_loop_lateness_seconds{lane="0"} 0.3\n');
    expect(text).toContain('leasehold_lane_loop_late{lane="0"} 1\n');
    expect(text).not.toContain('lane="1"');
  });
});
