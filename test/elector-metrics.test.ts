import { expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { openSession } from "../src/bound/session.js";
import { ManualClock } from "../src/clock.js";
import { Elector } from "../src/leader/elector.js";
import { ElectorMetrics } from "../src/metrics/elector.js";
import { FaultyStore } from "../src/testkit/faulty-store.js";

/** Renewals every 300 ms of a 1 s lease, no jitter: the same timing for both kinds. */
const TIMING = { leaseMs: 1000, renewMs: 300, retryMs: 100, safetyMs: 100, jitter: 0 };

it("reports leader gauge, transitions, renewals, renew failures and time since the last renewal", async () => {
  const clock = new ManualClock();
  const store = new FaultyStore(new MemoryStore(), clock);
  const metrics = new ElectorMetrics(clock);
  const elector = new Elector({
    store,
    name: "jobs/m",
    identity: "a",
    ...TIMING,
    clock,
  });
  const untrack = metrics.track(elector);
  elector.start();
  await clock.advance(0);
  await clock.advance(600); // two renewals
  store.failNextPut("fail-before");
  await clock.advance(350); // a failed renewal at 900, retried at 1000
  const text = metrics.render();
  expect(text).toContain('leasehold_elector_is_leader{lease="jobs/m",identity="a"} 1');
  expect(text).toContain('leasehold_elector_term{lease="jobs/m",identity="a"} 1');
  expect(text).toContain('leasehold_elector_leadership_transitions_total{lease="jobs/m",identity="a"} 1');
  expect(text).toContain('leasehold_elector_renewals_total{lease="jobs/m",identity="a"} 2');
  expect(text).toContain('leasehold_elector_renew_failures_total{lease="jobs/m",identity="a"} 1');
  expect(text).toContain('leasehold_elector_store_errors_total{lease="jobs/m",identity="a",during="renew"} 1');
  expect(text).toContain('leasehold_elector_seconds_since_last_renewal{lease="jobs/m",identity="a"} 0.350');
  await elector.stop();
  expect(metrics.render()).toContain('leasehold_elector_is_leader{lease="jobs/m",identity="a"} 0');
  untrack();
  expect(metrics.render()).not.toContain("jobs/m");
});

it("tracks a lease bound to a process session the same way: the session's renewals are the lease's", async () => {
  const clock = new ManualClock();
  const metrics = new ElectorMetrics(clock);
  const session = openSession({
    store: new MemoryStore(),
    name: "_sessions/a",
    identity: "a",
    ...TIMING,
    clock,
  });
  const elector = session.elector({ name: "jobs/bound" });
  metrics.track(elector);
  elector.start();
  await clock.advance(0);
  await clock.advance(0);
  await clock.advance(650); // two session renewals
  const text = metrics.render();
  expect(text).toContain('leasehold_elector_is_leader{lease="jobs/bound",identity="a"} 1');
  expect(text).toContain('leasehold_elector_term{lease="jobs/bound",identity="a"} 1');
  expect(text).toContain('leasehold_elector_renewals_total{lease="jobs/bound",identity="a"} 2');
  expect(text).toContain('leasehold_elector_seconds_since_last_renewal{lease="jobs/bound",identity="a"} 0.050');
  await session.close();
  expect(metrics.render()).toContain('leasehold_elector_is_leader{lease="jobs/bound",identity="a"} 0');
});
