/**
 * The renewal schedule (src/elector/renewal-schedule.ts, docs/partitions.md): two whole attempts
 * fit after a renewal is due, a timed-out attempt is sent again at once, a fast failure backs off
 * but leaves one whole attempt before the window closes, and never spins. The needless failovers
 * this removes are measured against latency in bench/wan.bench.ts.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { resolveElectorOptions } from "../src/elector/options.js";
import { defaultCallTimeoutMs, renewalRetryAt, renewalTimeoutMs } from "../src/elector/renewal-schedule.js";

describe("the renewal schedule", () => {
  it("the default call timeout leaves two whole attempts between the renewal and the window's end", () => {
    for (const leaseMs of [300, 1000, 2000, 15_000, 60_000]) {
      const o = resolveElectorOptions({ store: new MemoryStore(), name: "x", leaseMs });
      expect(o.callTimeoutMs).toBe(defaultCallTimeoutMs(leaseMs, o.safetyMs, o.renewMs));
      expect(o.renewMs + 2 * o.callTimeoutMs).toBeLessThanOrEqual(leaseMs - o.safetyMs);
      expect(o.callTimeoutMs).toBeLessThanOrEqual(o.renewMs);
    }
    // 15 s: safety 1.5 s, renew 5 s, 8.5 s left when due: 4.25 s per attempt.
    expect(defaultCallTimeoutMs(15_000, 1500, 5000)).toBe(4250);
    // A given callTimeoutMs is kept.
    expect(resolveElectorOptions({ store: new MemoryStore(), name: "x", callTimeoutMs: 9000 }).callTimeoutMs).toBe(
      9000,
    );
  });

  it("an attempt takes the call timeout, never past the window", () => {
    expect(renewalTimeoutMs(5000, 13_500, 4250)).toBe(4250);
    expect(renewalTimeoutMs(10_000, 13_500, 4250)).toBe(3500);
    expect(renewalTimeoutMs(14_000, 13_500, 4250)).toBe(0);
  });

  it("a timed-out attempt goes again at once; the second attempt has the whole timeout", () => {
    const first = { sentAt: 5000, timeoutMs: 4250, until: 13_500, callTimeoutMs: 4250, backoffMs: 2000 };
    const at = renewalRetryAt({ ...first, failedAt: 9250 });
    expect(at).toBe(9250);
    expect(renewalTimeoutMs(at, 13_500, 4250)).toBe(4250);
  });

  it("a fast failure backs off, but never past the last instant with a whole attempt left, nor past the window", () => {
    const base = { timeoutMs: 4250, until: 13_500, callTimeoutMs: 4250, backoffMs: 2000 };
    expect(renewalRetryAt({ ...base, sentAt: 5000, failedAt: 5010 })).toBe(7010);
    expect(renewalRetryAt({ ...base, sentAt: 8000, failedAt: 8010 })).toBe(9250);
    // Past that instant: the back-off again (no spinning), capped at the window's end.
    expect(renewalRetryAt({ ...base, sentAt: 9300, failedAt: 9310 })).toBe(11_310);
    expect(renewalRetryAt({ ...base, sentAt: 12_000, failedAt: 12_010 })).toBe(13_500);
  });
});
