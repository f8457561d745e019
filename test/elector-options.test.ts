import { describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import { Elector, LeaseValidationError, MemoryStore, runAsLeader } from "../src/index.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";

const store = new MemoryStore();

function issuesOf(options: Record<string, unknown>): LeaseValidationError {
  try {
    new Elector({ store, name: "jobs/main", ...options } as never);
  } catch (error) {
    expect(error).toBeInstanceOf(LeaseValidationError);
    return error as LeaseValidationError;
  }
  throw new Error("expected the options to be rejected");
}

describe("elector options", () => {
  it("defaults follow client-go's proportions", () => {
    const e = new Elector({ store, name: "jobs/main" });
    expect({ lease: e.leaseMs, renew: e.renewMs, retry: e.retryMs, safety: e.safetyMs }).toEqual({
      lease: 15_000,
      renew: 5_000,
      retry: 2_000,
      safety: 1_500,
    });
    // Bound to the process session by default: the process's identity, shared by its Electors.
    expect(e.session).toBe(true);
    expect(e.identity).toMatch(/^process-[0-9a-f]{8}$/);
    expect(new Elector({ store, name: "jobs/main", session: false }).identity).toMatch(/^candidate-[0-9a-f]{8}$/);
  });

  it("renewMs must leave room before the safe window closes", () => {
    const e = issuesOf({ leaseMs: 1000, renewMs: 950 });
    expect(e.issues).toEqual([
      {
        path: "renewMs",
        message: expect.stringContaining("expected less than leaseMs - safetyMs (1000 - 100 = 900), got 950"),
      },
    ]);
    expect(e.message).toMatch(/^invalid elector options: renewMs: /);
  });

  it("names every bad field at once", () => {
    const e = issuesOf({ name: "Bad Name", leaseMs: 1.5, jitter: 3, store: {}, metadata: { a: 1 } });
    expect(e.issues.map((i) => i.path).sort()).toEqual(["jitter", "leaseMs", "metadata.a", "name", "store"]);
    expect(e.issues.find((i) => i.path === "store")?.message).toBe(
      "expected a LeaseStore (an object with get and put)",
    );
  });

  it("safetyMs and retryMs are bounded by the lease", () => {
    expect(issuesOf({ leaseMs: 1000, safetyMs: 1000, renewMs: 10 }).issues.map((i) => i.path)).toContain("safetyMs");
    expect(issuesOf({ leaseMs: 1000, retryMs: 5000 }).issues.map((i) => i.path)).toEqual(["retryMs"]);
  });

  it("a misspelt option is refused, not ignored", () => {
    expect(issuesOf({ leaseMS: 5000 }).issues).toEqual([{ path: "leaseMS", message: "unknown field" }]);
  });

  it("metadata over 1 KiB is refused", () => {
    expect(issuesOf({ metadata: { big: "x".repeat(1100) } }).issues[0]?.message).toBe(
      "expected at most 1024 bytes as JSON",
    );
  });

  it("signal and onElector are refused by new Elector, with where they belong", () => {
    const e = issuesOf({ signal: new AbortController().signal, onElector: () => {} });
    expect(e.issues).toEqual([
      {
        path: "signal",
        message: expect.stringContaining("pass it to runAsLeader(options, fn), or call elector.stop()"),
      },
      { path: "onElector", message: expect.stringContaining("pass it to runAsLeader(options, fn)") },
    ]);
  });

  it("runAsLeader still takes signal and onElector (they are its own, not the elector's)", async () => {
    const stop = new AbortController();
    let seen: Elector | undefined;
    const run = runAsLeader({ store, name: "jobs/run", signal: stop.signal, onElector: (e) => (seen = e) }, () => 1);
    await expect(run).resolves.toBe(1);
    expect(seen).toBeInstanceOf(Elector);
  });

  it("a waiting follower of a renewing Elector reads about once a second whatever the lease length (pollMs), not every retryMs", async () => {
    for (const leaseMs of [2000, 10_000]) {
      const clock = new ManualClock();
      const tracked = new TrackedStore(new StoreWrapper(new MemoryStore(), { without: ["watch"] }));
      const timing = { store: tracked, name: "jobs/poll", leaseMs, jitter: 0, clock, session: false };
      const leader = new Elector({ ...timing, identity: "a" });
      leader.start();
      await clock.advance(0);
      const follower = new Elector({ ...timing, identity: "b" });
      expect(follower.pollMs).toBe(1000);
      follower.start();
      await clock.advance(0);
      tracked.resetCounts();
      await clock.advance(60_000);
      // The leader renews without reading: every read is the follower's, one a second.
      expect(tracked.counts.get).toBe(60);
      expect(follower.current).toMatchObject({ isLeader: false, holder: "a" });
      await Promise.all([leader.stop(), follower.stop()]);
    }
  });
});
