/**
 * The observer's judgement of a session tenure (src/bound/observer.ts) on the manual clock.
 * Found by the seeded chaos (seed 24, memory, once the default Elector became session-bound): a
 * follower had watched a session record stand unchanged at term 1 for a lease (its owner paused),
 * the owner re-established it at term 2 and took a lease under it, and the follower judged that
 * lease by its old observation, "older than the tenure for a lease", so over, and took the lease
 * from a live leader. An observation made before the lease naming the tenure was seen proves
 * nothing about that tenure.
 */
import { expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { SessionObserver } from "../src/bound/observer.js";
import { ManualClock } from "../src/clock.js";
import { makeRecord } from "../src/testkit/store-contract.js";

it("a session record older than the tenure counts as over only once that has stood for a lease since the lease naming it was seen", async () => {
  const clock = new ManualClock();
  const store = new MemoryStore();
  const name = "jobs/_sessions/slot-0";
  const observer = new SessionObserver({ store, clock, maxSkewMs: 0, callTimeoutMs: 500, pollMs: 250, identity: "f" });
  const first = await store.put(
    makeRecord(name, { holder: "a", term: 1, leaseMs: 1000, renewedAt: clock.wallNow() }),
    null,
  );
  await observer.look(name, clock.now());
  await clock.advance(1500);
  await observer.look(name, clock.now()); // term 1, unchanged for a lease and a half
  await clock.advance(100);
  // Its owner wakes, finds its session over and establishes term 2, then binds a lease to it.
  await store.put(
    makeRecord(name, { holder: "a", term: 2, leaseMs: 1000, renewedAt: clock.wallNow() }),
    first.revision,
  );
  await clock.advance(100);
  const since = clock.now(); // the lease naming jobs/_sessions/slot-0@2 is first seen now
  const stale = observer.known(name)!;
  expect(stale.stored?.record.term).toBe(1);
  // A look sent before the lease named term 2 says nothing of it: look again now.
  const verdict = observer.verdict({ name, term: 2 }, stale, 1000, since);
  expect(verdict).toEqual({ kind: "live", lookAt: since });
  // A fresh look shows the tenure live.
  const fresh = await observer.look(name, clock.now());
  expect(observer.verdict({ name, term: 2 }, fresh, 1000, since).kind).toBe("live");
});

it("a session record still older than the tenure a lease after that lease was seen is over (replaced outside leasehold)", async () => {
  const clock = new ManualClock();
  const store = new MemoryStore();
  const name = "jobs/_sessions/slot-0";
  const observer = new SessionObserver({ store, clock, maxSkewMs: 0, callTimeoutMs: 500, pollMs: 250, identity: "f" });
  await store.put(makeRecord(name, { holder: "a", term: 1, leaseMs: 1000, renewedAt: clock.wallNow() }), null);
  const since = clock.now();
  await observer.look(name, since);
  await clock.advance(1000);
  const obs = await observer.look(name, clock.now());
  expect(observer.verdict({ name, term: 2 }, obs, 1000, since)).toEqual({ kind: "over" });
});
