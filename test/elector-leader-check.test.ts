/**
 * The leader check reads the clock (docs/design.md §3): past `leaderUntil`, `current.isLeader`,
 * `stillLeader()` and `assertLeader()` say "not leader" even though no timer has run, which is
 * what a process paused past its lease sees on waking. The clock jumps without firing timers.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { ManualClock } from "../src/clock.js";
import { LeadershipLostError } from "../src/errors.js";
import { Elector, type ElectorOptions } from "../src/leader/elector.js";
import { type LeaderContext, runAsLeader } from "../src/leader/run-as-leader.js";

const timing = { leaseMs: 1000, renewMs: 300, retryMs: 100, safetyMs: 100, jitter: 0 } as const;

function elector(clock: ManualClock, store = new MemoryStore(), extra: Partial<ElectorOptions> = {}): Elector {
  return new Elector({ store, name: "jobs/check", identity: "a", clock, ...timing, ...extra });
}

describe("a leader check that reads the clock", () => {
  it("current.isLeader turns false at leaderUntil with timers frozen; the watchdog only makes it visible later", async () => {
    const clock = new ManualClock();
    const e = elector(clock);
    let stillLeader: (() => boolean) | undefined;
    let signal: AbortSignal | undefined;
    e.on("elected", (event) => {
      stillLeader = event.stillLeader;
      signal = event.signal;
    });
    e.start();
    await clock.advance(0);
    const until = e.current.leaderUntil;
    expect(e.current.isLeader).toBe(true);
    expect(until).toBe(900); // sentAt 0 + leaseMs 1000 - safetyMs 100
    expect(stillLeader?.()).toBe(true);

    clock.jump(899);
    expect(e.current.isLeader).toBe(true);
    clock.jump(1); // exactly leaderUntil: the window is closed
    expect(e.current.isLeader).toBe(false);
    expect(e.current.phase).toBe("leader"); // no timer has run: the state machine has not moved yet
    expect(signal?.aborted).toBe(false);

    // The explicit check ends the term at once, without waiting for the watchdog's timer.
    expect(stillLeader?.()).toBe(false);
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBeInstanceOf(LeadershipLostError);
    expect(signal?.reason).toMatchObject({ term: 1, reason: "expired" });
    expect(e.current.phase).toBe("follower");
    await e.stop({ release: false });
  });

  it("a renewal moves the deadline: the check stays true across renewals on schedule", async () => {
    const clock = new ManualClock();
    const e = elector(clock);
    let stillLeader: (() => boolean) | undefined;
    e.on("elected", (event) => {
      stillLeader = event.stillLeader;
    });
    e.start();
    await clock.advance(0);
    for (let t = 0; t < 10; t++) {
      await clock.advance(250);
      expect(e.current.isLeader).toBe(true);
      expect(stillLeader?.()).toBe(true);
      expect(e.current.leaderUntil).toBeGreaterThan(clock.now());
    }
    await e.stop();
    expect(stillLeader?.()).toBe(false);
  });

  it("runAsLeader's context: stillLeader() and assertLeader() before each side effect", async () => {
    const clock = new ManualClock();
    const stop = new AbortController();
    let context: LeaderContext | undefined;
    let resume: (() => void) | undefined;
    const done = runAsLeader(
      { store: new MemoryStore(), name: "jobs/check", identity: "a", clock, ...timing, signal: stop.signal },
      async (c) => {
        if (context) return undefined; // later terms: nothing to do
        context = c;
        // Leader work that is "paused" until the test resumes it.
        await new Promise<void>((resolve) => {
          resume = resolve;
        });
        c.assertLeader();
        return "side effect done";
      },
    );
    await clock.advance(0);
    expect(context?.term).toBe(1);
    expect(context?.stillLeader()).toBe(true);
    expect(() => context?.assertLeader()).not.toThrow();

    clock.jump(5000); // the process was frozen for 5 s: the next term may already exist elsewhere
    expect(context?.signal.aborted).toBe(false);
    expect(context?.stillLeader()).toBe(false);
    let thrown: unknown;
    try {
      context?.assertLeader();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(LeadershipLostError);
    expect(thrown).toMatchObject({ term: 1, reason: "expired" });
    expect(context?.signal.aborted).toBe(true);

    resume?.();
    await clock.advance(0);
    stop.abort();
    await clock.advance(2000);
    // fn threw once its term was over: that is not runAsLeader's result (it campaigned again).
    expect(await done).not.toBe("side effect done");
  });
});
