/**
 * When a follower looks at the session its lease is bound to (src/bound/look-schedule.ts): just
 * after its owner's renewals, no more than once per 3/4 poll, never after the tenure could end.
 * And what that buys, on the manual clock: a crashed owner's lease is taken close to leaseMs
 * after its last renewal, whatever the poll.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { landingMarginMs, nextLookAt } from "../src/bound/look-schedule.js";
import { openSession } from "../src/bound/session.js";
import { ManualClock } from "../src/clock.js";
import { FaultyStore } from "../src/testkit/faulty-store.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";

const base = { now: 0, wallNow: 1_000_000, maxSkewMs: 1000, renewShare: 1 / 3, counts: false };

describe("nextLookAt: looks timed to renewals", () => {
  it("looks just after the renewal due next", () => {
    // leaseMs 6000: renewed every 2000 ms; written at wall 1_000_000 (monotonic 0), seen at once.
    const o = { ...base, renewedAt: 1_000_000, leaseMs: 6000, firstSeen: 5, readAt: 0, pollMs: 1000 };
    expect(nextLookAt(o)).toBe(2000 + landingMarginMs(2000));
  });

  it("skips renewals that come more often than 3/4 of a poll", () => {
    // leaseMs 2000: renewed every 666.7 ms; the first due more than 750 ms after the read is the second.
    const o = { ...base, renewedAt: 1_000_000, leaseMs: 2000, firstSeen: 5, readAt: 0, pollMs: 1000 };
    expect(nextLookAt(o)).toBeCloseTo((2 * 2000) / 3 + landingMarginMs(2000 / 3), 6);
    expect(nextLookAt({ ...o, counts: true })).toBeCloseTo((2 * 2000) / 3 + landingMarginMs(2000 / 3), 6);
  });

  it("times looks by the owner's stamp on this wall clock, from the latest read", () => {
    // Renewed 1500 ms before this read (wall 998_500), leaseMs 9000 (every 3000 ms): next due at +1500.
    const o = { ...base, renewedAt: 998_500, leaseMs: 9000, firstSeen: 0, readAt: 0, pollMs: 1000 };
    expect(nextLookAt(o)).toBe(1500 + 200);
    // Read 600 ms later: the renewal due 1,100 ms on is within half a poll of the next poll.
    expect(nextLookAt({ ...o, counts: true, readAt: 600, now: 600, wallNow: 1_000_600 })).toBe(1700);
  });

  it("never later than the expiry by observed time or by stamps (the confirming look)", () => {
    // First seen 1800 ms late (a slow read): expiry by observed time comes before the next renewal.
    const late = { ...base, renewedAt: 1_000_000, leaseMs: 2000, firstSeen: -1800, readAt: 0, pollMs: 5000 };
    expect(nextLookAt(late)).toBe(200);
    // A stamp far in the past: expiry by stamps (renewedAt + leaseMs + maxSkewMs, plus 1 ms).
    const stale = { ...base, renewedAt: 997_500, leaseMs: 2000, firstSeen: 0, readAt: 0, pollMs: 1000 };
    expect(nextLookAt(stale)).toBe(501);
  });

  it("a wrong clock or interval only moves looks: a stamp from the future waits at most until expiry", () => {
    const o = { ...base, renewedAt: 1_060_000, leaseMs: 3000, firstSeen: 0, readAt: 0, pollMs: 1000 };
    expect(nextLookAt(o)).toBe(3000);
    expect(nextLookAt({ ...o, counts: true })).toBe(1000);
  });
});

describe("nextLookAt: a session that counts its releases is looked at about once a poll", () => {
  it("a poll after the read when no renewal is due within half a poll after that", () => {
    // leaseMs 6000 (every 2000 ms): the renewal due at 2200 is 1,200 ms after the poll at 1000.
    const o = { ...base, counts: true, renewedAt: 1_000_000, leaseMs: 6000, firstSeen: 5, readAt: 0, pollMs: 1000 };
    expect(nextLookAt(o)).toBe(1000);
    // From the look at 1000, the renewal at 2200 is within half a poll after the poll at 2000.
    expect(nextLookAt({ ...o, readAt: 1000, now: 1000, wallNow: 1_001_000 })).toBe(2200);
  });

  it("10 s leases: two polls, then the renewal (54 looks a minute)", () => {
    const o = { ...base, counts: true, renewedAt: 1_000_000, leaseMs: 10_000, firstSeen: 0, pollMs: 1000 };
    const looks = [200];
    while (looks.length < 7) {
      const readAt = looks.at(-1)!;
      const renewedAt = 1_000_000 + Math.floor(readAt / (10_000 / 3)) * (10_000 / 3);
      looks.push(nextLookAt({ ...o, renewedAt, readAt, now: readAt, wallNow: 1_000_000 + readAt, firstSeen: readAt }));
    }
    expect(looks.map((t) => Math.round(t))).toEqual([200, 1200, 2200, 3533, 4533, 5533, 6867]);
  });
});

describe("a crashed owner's bound lease is taken close to leaseMs after its last renewal", () => {
  /** Counts reads of one record. */
  class Reads extends StoreWrapper {
    count = 0;
    constructor(
      inner: MemoryStore,
      private readonly name: string,
    ) {
      super(inner, { without: ["watch"] });
    }
    override get(name: string, options?: Parameters<MemoryStore["get"]>[1]) {
      if (name === this.name) this.count++;
      return super.get(name, options);
    }
  }

  // Renewals every 2000 ms, more than 3/4 of either poll apart: each is looked at.
  for (const pollMs of [1000, 2500]) {
    it(`pollMs ${pollMs}`, async () => {
      const clock = new ManualClock();
      const memory = new MemoryStore();
      const timing = { leaseMs: 6000, renewMs: 2000, retryMs: 500, jitter: 0, clock } as const;
      const aStore = new FaultyStore(memory, clock);
      const a = openSession({ store: aStore, name: "_sessions/a", identity: "a", ...timing });
      const bStore = new Reads(memory, "_sessions/a");
      const b = openSession({ store: bStore, name: "_sessions/b", identity: "b", ...timing, pollMs });
      const ea = a.elector({ name: "jobs/x", handover: false });
      const eb = b.elector({ name: "jobs/x", handover: false });
      let electedAt: number | undefined;
      eb.on("elected", () => (electedAt = clock.now()));
      ea.start();
      await clock.advance(0);
      eb.start();
      await clock.advance(10_000);
      // a renews at 2000k; it crashes right after its renewal at 10_000 (nothing more lands).
      const lastRenewal = 10_000;
      aStore.hang = true;
      await clock.advance(20_000);
      expect(electedAt).toBeDefined();
      const after = electedAt! - lastRenewal;
      // leaseMs after the last renewal plus the landing margin (200 ms): the renewal was first
      // seen that late, whatever the poll; a look every poll would have seen it up to a poll late.
      expect(after).toBeGreaterThanOrEqual(6000);
      expect(after).toBeLessThanOrEqual(6000 + landingMarginMs(2000));
      await b.close({ release: false });
      aStore.hang = false;
      for (const abort of aStore.hung.splice(0)) abort();
      await a.close({ release: false }).catch(() => {});
    });
  }
});
