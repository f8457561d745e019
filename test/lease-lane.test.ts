/**
 * The lane (src/elector/lane.ts): follower-side calls ask it first, renewals and releases never do,
 * so a lane that holds back polls and acquisitions under load cannot make a leader late.
 */
import { expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { ManualClock } from "../src/clock.js";
import type { Lane, LaneRelease } from "../src/elector/lane.js";
import { Elector } from "../src/leader/elector.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";

/** Records what asked; admits only while open. */
class GateLane implements Lane {
  readonly asked: string[] = [];
  open = true;
  private waiting: Array<() => void> = [];
  async admit(kind: "poll" | "acquire", signal?: AbortSignal): Promise<LaneRelease> {
    this.asked.push(kind);
    if (!this.open) {
      await new Promise<void>((resolve, reject) => {
        this.waiting.push(resolve);
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    }
    return () => {};
  }
  release(): void {
    this.open = true;
    for (const go of this.waiting.splice(0)) go();
  }
}

it("a renewing Elector's polls and acquisitions wait for the lane; renewals and the release never ask it", async () => {
  const clock = new ManualClock();
  const tracked = new TrackedStore(new StoreWrapper(new MemoryStore(), { without: ["watch"] }));
  const lane = new GateLane();
  const timing = {
    store: tracked,
    name: "jobs/lane",
    leaseMs: 1000,
    renewMs: 300,
    pollMs: 100,
    jitter: 0,
    clock,
    lane,
    session: false,
  };
  const a = new Elector({ ...timing, identity: "a" });
  a.start();
  await clock.advance(0);
  expect(a.current.isLeader).toBe(true);
  expect(lane.asked).toEqual(["poll", "acquire"]);
  lane.open = false;
  const b = new Elector({ ...timing, identity: "b" });
  b.start();
  tracked.resetCounts();
  await clock.advance(3000);
  // The leader kept renewing through a shut lane; the follower never got to read.
  expect(a.current.isLeader).toBe(true);
  expect(tracked.counts).toMatchObject({ get: 0, put: 10 });
  expect(lane.asked).toEqual(["poll", "acquire", "poll"]);
  await a.stop();
  expect((await tracked.get("jobs/lane"))?.record.holder).toBeNull();
  lane.release();
  await clock.advance(0);
  expect(b.current).toMatchObject({ isLeader: true, term: 2 });
  expect(lane.asked).toEqual(["poll", "acquire", "poll", "acquire"]);
  await b.stop();
});
