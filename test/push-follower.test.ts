/**
 * Push streams are for followers (src/elector/push-follower.ts), tried against the real API with
 * its per-token stream bound: a process leading many leases holds no stream, and followers whose
 * streams the bound refuses back off (doubling) instead of asking again every retry, while they
 * still take over by polling. Real time, real HTTP; counted from the server's answers.
 */
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { HttpStore } from "../src/backends/http/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { openSession } from "../src/bound/session.js";
import { Elector } from "../src/leader/elector.js";
import type { LeaseStore } from "../src/lease.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";
import { startApi, TOKENS } from "./support/api-server.js";

const STREAMS = 4;
let api: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  api = await startApi({
    store: new SqliteStore({ path: ":memory:" }),
    limits: { watchStreamsPerToken: STREAMS },
    watchPollMs: 50,
  });
});
afterAll(async () => {
  await api.close();
  await api.store.close?.();
});

/** An HTTP store (one process) that counts the streams it opens, refused or not, and those open now. */
class CountedStreams extends StoreWrapper {
  opened = 0;
  open = 0;
  constructor() {
    super(new HttpStore({ baseUrl: api.url, token: TOKENS.admin }));
  }
  protected override async *watchOf(name: string, signal: AbortSignal) {
    this.opened++;
    this.open++;
    try {
      yield* super.watchOf(name, signal);
    } finally {
      this.open--;
    }
  }
}

const LEASES = 12;
const LEASE_MS = 3000;

it("a process leading 12 leases holds no stream; 12 followers under a bound of 4 streams back off, and still take over at once on release", async () => {
  const prefix = uniqueName("push");
  const leaderStore = new CountedStreams();
  const leaders = Array.from(
    { length: LEASES },
    (_, i) => new Elector({ store: leaderStore, name: `${prefix}/${i}`, identity: "leader", leaseMs: LEASE_MS }),
  );
  const elected = leaders.map((e) => new Promise<void>((resolve) => e.on("elected", () => resolve())));
  for (const e of leaders) e.start();
  await Promise.all(elected);
  // Each was a follower for a moment (its stream may have been opened); leading, none is left open.
  await vi.waitFor(() => expect(leaderStore.open).toBe(0));

  const followerStore = new CountedStreams();
  const refusals: string[] = [];
  const followers = Array.from(
    { length: LEASES },
    (_, i) => new Elector({ store: followerStore, name: `${prefix}/${i}`, identity: "follower", leaseMs: LEASE_MS }),
  );
  for (const f of followers) {
    f.on("error", ({ error }) => {
      if (String((error as Error).message).includes("watchStreamsPerToken")) refusals.push(f.name);
    });
    f.start();
  }
  const watchedMs = 6000;
  await new Promise((r) => setTimeout(r, watchedMs));
  expect(followerStore.open).toBeLessThanOrEqual(STREAMS);
  // retryMs is leaseMs / 7.5 = 400 ms: without the back-off each refused follower would ask
  // about 15 times in 6 s (jittered 400-480 ms); doubling from 400 ms it asks at most 5 times.
  const refusedFollowers = new Set(refusals).size;
  expect(refusedFollowers).toBeGreaterThanOrEqual(LEASES - STREAMS);
  expect(refusals.length).toBeLessThanOrEqual(refusedFollowers * 5);

  // The leaders step down with a release: every follower leads, pushed or polled (pollMs 1 s).
  const taken = followers.map((f) => new Promise<void>((resolve) => f.on("elected", () => resolve())));
  await Promise.all(leaders.map((e) => e.stop()));
  await Promise.all(taken);
  await vi.waitFor(() => expect(followerStore.open).toBe(0));
  await Promise.all(followers.map((f) => f.stop()));
}, 60_000);

it("bound leases: a process session leading 12 leases holds no stream either", async () => {
  const prefix = uniqueName("push-bound");
  const store: LeaseStore = new CountedStreams();
  const session = openSession({ store, name: `${prefix}/_sessions/a`, identity: "a", leaseMs: LEASE_MS });
  const electors = Array.from({ length: LEASES }, (_, i) => session.elector({ name: `${prefix}/${i}` }));
  const elected = electors.map((e) => new Promise<void>((resolve) => e.on("elected", () => resolve())));
  for (const e of electors) e.start();
  await Promise.all(elected);
  await vi.waitFor(() => expect((store as CountedStreams).open).toBe(0));
  await session.close();
}, 60_000);
