/**
 * The back-off after lost terms (src/elector/follower-rules.ts `LossBackoff`), the one both the
 * lease-holder core and the session-bound elector keep: doubling with each term lost in a row from
 * retryMs, capped at leaseMs, and a term held for a whole lease ends the run.
 */
import { expect, it } from "vitest";
import { LossBackoff } from "../src/elector/follower-rules.js";

const pace = { leaseMs: 1000, retryMs: 100, jitter: 0, random: () => 0.5 };

it("doubles with each term lost in a row, capped at leaseMs", () => {
  const b = new LossBackoff();
  const waits: number[] = [];
  let now = 0;
  for (let i = 0; i < 6; i++) {
    b.lost(now, now - 10, pace); // each held for 10 ms only
    waits.push(b.notBefore - now);
    now += 5000;
  }
  expect(waits).toEqual([100, 200, 400, 800, 1000, 1000]);
});

it("a term held for a whole lease ends the run of losses", () => {
  const b = new LossBackoff();
  b.lost(0, -10, pace);
  b.lost(1000, 990, pace);
  expect(b.notBefore - 1000).toBe(200);
  b.lost(5000, 3000, pace); // held 2 s: a new run
  expect(b.notBefore - 5000).toBe(100);
});

it("with jitter, a random half of the wait is shaved off", () => {
  const b = new LossBackoff();
  b.lost(0, 0, { ...pace, jitter: 0.2, random: () => 0 });
  expect(b.notBefore).toBe(50);
});
