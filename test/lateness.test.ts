/**
 * The one event-loop lateness sampler (src/elector/lateness.ts) on a manual clock: the lane's
 * windowed p99 and the API's instantaneous, overdue-aware `now()` from the same samples, with the
 * server's start/stop lifecycle and the lane's touch/idle one. A late loop is made by `clock.jump`:
 * the timer then wakes after its due time, as it does behind a blocked event loop. The lane's use
 * of it is test/load-lane.test.ts; admission's, test/admission.test.ts and
 * test/admission-process.test.ts.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import { LatenessProbe, LatenessSampler } from "../src/elector/lateness.js";

function setup(options: ConstructorParameters<typeof LatenessSampler>[0] = {}) {
  const clock = new ManualClock();
  const sampler = new LatenessSampler({ clock, ...options });
  /** The loop stalls for `ms`, then its timers run. */
  const stall = async (ms: number) => {
    clock.jump(ms);
    await clock.advance(0);
  };
  return { clock, sampler, stall };
}

describe("lateness sampler", () => {
  it("now() is the last sample, or how overdue the next one is, whichever is more", async () => {
    const { clock, sampler } = setup({ sampleMs: 50 });
    expect(sampler.now()).toBe(0); // not sampling
    sampler.start();
    await clock.advance(200);
    expect(sampler.now()).toBe(0);
    // Blocked: the timer has not run yet, but whoever asks now is judged 150 ms late.
    clock.jump(200);
    expect(sampler.now()).toBe(150);
    await clock.advance(0); // the timer runs, 150 ms late
    expect(sampler.now()).toBe(150);
    expect(sampler.latenessMs).toBe(150);
    await clock.advance(50); // the next one on time: the instant reading recovers at once
    expect(sampler.now()).toBe(0);
    expect(sampler.latenessMs).toBe(150); // the window's p99 remembers
    sampler.stop();
    expect(sampler.now()).toBe(0);
    expect(sampler.latenessMs).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it("the p99 of the window: with fewer than 100 samples their max, forgotten after windowMs", async () => {
    const { clock, sampler, stall } = setup({ sampleMs: 100, windowMs: 3000 });
    sampler.touch();
    await clock.advance(500);
    await stall(400); // the 100 ms timer wakes 300 ms late
    expect(sampler.latenessMs).toBe(300);
    await clock.advance(2900);
    expect(sampler.latenessMs).toBe(300);
    await clock.advance(200);
    expect(sampler.latenessMs).toBe(0);
  });

  it("touch() samples until idleMs after the last touch; start() until stop()", async () => {
    const { clock, sampler } = setup({ sampleMs: 1000, idleMs: 5000 });
    sampler.touch();
    await clock.advance(4000);
    sampler.touch();
    await clock.advance(4000);
    expect(sampler.sampling).toBe(true);
    await clock.advance(2000); // the sample at 10 s is 6 s after the last touch
    expect([sampler.sampling, clock.pending]).toEqual([false, 0]);

    sampler.start();
    await clock.advance(60_000);
    expect(sampler.sampling).toBe(true);
    sampler.touch(); // a touch does not end an explicit start
    await clock.advance(60_000);
    expect(sampler.sampling).toBe(true);
    sampler.stop();
    expect([sampler.sampling, clock.pending]).toEqual([false, 0]);
  });

  it("onSample runs after each sample", async () => {
    const { clock, sampler } = setup({ sampleMs: 100 });
    let samples = 0;
    sampler.onSample = () => samples++;
    sampler.start();
    await clock.advance(1000);
    expect(samples).toBe(10);
    sampler.stop();
  });
});

describe("LatenessProbe (leasehold/api)", () => {
  it("reads the loop on real timers from start to stop, overdue-aware, 0 while stopped", async () => {
    let t = 0;
    const probe = new LatenessProbe(10, () => t);
    expect(probe.now()).toBe(0);
    expect(probe.start()).toBe(probe);
    t = 35; // 25 ms overdue before any timer ran
    expect(probe.now()).toBe(25);
    await new Promise((resolve) => setTimeout(resolve, 30));
    // The first tick recorded 25 ms; later ones, with the clock standing still, nothing.
    expect(probe.now()).toBeLessThanOrEqual(25);
    probe.stop();
    expect(probe.now()).toBe(0);
  });
});
