/** The HTTP store against the real API server: the same store and elector contracts as every backend. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpStore } from "../src/backends/http/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { systemClock } from "../src/clock.js";
import { isAmbiguous, isLeaseConflictError, isLeaseStillHeldError } from "../src/errors.js";
import { Elector } from "../src/leader/elector.js";
import { describeElectorContract, type ElectorContractContext } from "../src/testkit/elector-contract.js";
import { describeStoreContract, uniqueName } from "../src/testkit/store-contract.js";
import { startApi, TOKENS } from "./support/api-server.js";
import { inProcessApi } from "./support/in-process-api.js";
import { SwitchableClock } from "./support/switchable-clock.js";

// The server judges expiry by this clock: the real one, or the elector contract's manual clock.
const serverClock = new SwitchableClock();
let api: Awaited<ReturnType<typeof startApi>>;
const dir = mkdtempSync(join(tmpdir(), "leasehold-http-store-"));
const database = join(dir, "leases.db");
beforeAll(async () => {
  // maxSkewMs 0: one server, whose clock is the electors' own in the elector contract.
  api = await startApi({
    store: new SqliteStore({ path: database }),
    watchPollMs: 50,
    clock: serverClock,
    maxSkewMs: 0,
  });
});
afterAll(async () => {
  await api.close();
  await api.store.close?.();
  rmSync(dir, { recursive: true, force: true });
});

const create = async (context?: ElectorContractContext) => {
  serverClock.target = context?.clock ?? systemClock;
  return { store: new HttpStore({ baseUrl: api.url, token: TOKENS.admin }) };
};
const stamps = "the API server stamps renewedAt with its own clock";
describeStoreContract("http", {
  create,
  conflictCarriesCurrent: true,
  stampsRenewedAt: stamps,
  enforcesTermRules: true,
  // In the API's own store, as a foreign tool would write it: the API lists it as a row of its own.
  plantUnreadable: async (name) => {
    const raw = new Database(database);
    try {
      raw.prepare("INSERT INTO leases (name, rev, record) VALUES (?, 3, '{not json')").run(name);
    } finally {
      raw.close();
    }
  },
});
// No sharded contract here: the API writes a group's records only through its group routes (a
// remote member heartbeats: test/sharding/api.test.ts), never through the raw lease routes.
const httpContract = {
  stampsRenewedAt: stamps,
  refusesTakeoverWhileHeld: "the API gives a lease to another holder only once its own clock says it expired",
};
describeElectorContract("http", create, httpContract);
describeElectorContract("http", create, { ...httpContract, session: false });

describe("http store: push", () => {
  beforeAll(() => {
    serverClock.target = systemClock;
  });
  it("a follower hears of a release through the watch stream, long before its next poll", async () => {
    const name = uniqueName("push");
    const common = { name, leaseMs: 120_000, renewMs: 30_000, retryMs: 60_000, jitter: 0 };
    const a = new Elector({
      ...common,
      store: new HttpStore({ baseUrl: api.url, token: TOKENS.admin }),
      identity: "a",
    });
    const b = new Elector({
      ...common,
      store: new HttpStore({ baseUrl: api.url, token: TOKENS.admin }),
      identity: "b",
    });
    const aElected = new Promise((resolve) => a.on("elected", resolve));
    a.start();
    await aElected;
    const bElected = new Promise<{ term: number }>((resolve) => b.on("elected", resolve));
    b.start();
    // b has read the lease (held by a); its next poll is 60 s away.
    await new Promise<void>((resolve) => {
      const check = () => (b.current.holder === "a" ? resolve() : setTimeout(check, 10));
      check();
    });
    await a.stop();
    // b's next poll is 60 s away, so an election before it can only come from the stream. (A
    // second check of the elapsed time against those 60 s held whenever this one did.)
    const won = await Promise.race([
      bElected,
      new Promise((r) => setTimeout(() => r("not elected before the next poll was due"), 20_000)),
    ]);
    expect(won).toEqual(expect.objectContaining({ term: 2 }));
    await b.stop();
  });

  it("refused writes are not ambiguous: a read-only token gets a clear, non-ambiguous error", async () => {
    const store = new HttpStore({ baseUrl: api.url, token: TOKENS.reader });
    const error = await store
      .put(
        {
          name: uniqueName(),
          holder: "x",
          term: 1,
          leaseMs: 1000,
          acquiredAt: 0,
          renewedAt: 0,
          metadata: {},
          writeId: "w1",
        },
        null,
      )
      .catch((e: unknown) => e);
    // Not a store outage: the API's own answer, which no retry changes (the CLI names LEASEHOLD_TOKEN).
    expect(error).toMatchObject({ name: "LeaseholdApiError", status: 403 });
    expect(isAmbiguous(error)).toBe(false);
    expect((error as Error).message).toContain("403");
  });

  it("a takeover of a lease the API still counts as held is a LeaseStillHeldError: not applied, not a conflict, with when to retry", async () => {
    const name = uniqueName("held");
    const leader = new HttpStore({ baseUrl: api.url, token: TOKENS.admin });
    const follower = new HttpStore({ baseUrl: api.url, token: TOKENS.admin });
    const held = await leader.put(
      { name, holder: "a", term: 1, leaseMs: 5000, acquiredAt: 0, renewedAt: 0, metadata: {}, writeId: "w1" },
      null,
    );
    const error = await follower
      .put({ ...held.record, holder: "b", term: 2, writeId: "w2" }, held.revision)
      .catch((e: unknown) => e);
    expect(isLeaseStillHeldError(error)).toBe(true);
    expect(isAmbiguous(error)).toBe(false);
    expect(isLeaseConflictError(error)).toBe(false);
    // The server's own moment, to the millisecond (its freeInMs): renewedAt + leaseMs (+ this
    // server's maxSkewMs of 0) + 1 from when it answered, so at most leaseMs + 1 from now.
    const retryAfterMs = (error as { retryAfterMs?: number }).retryAfterMs!;
    expect(Number.isInteger(retryAfterMs)).toBe(true);
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(5001);
    // Nor may another instance renew or release the leader's term.
    const renewal = await follower.put({ ...held.record, writeId: "w3" }, held.revision).catch((e: unknown) => e);
    expect(isLeaseStillHeldError(renewal)).toBe(true);
    expect(await leader.get(name)).toEqual(held);
  });

  it("an unreachable API makes writes ambiguous", async () => {
    const store = new HttpStore({ baseUrl: "http://127.0.0.1:9", timeoutMs: 2000 });
    const error = await store
      .put(
        { name: "x", holder: "x", term: 1, leaseMs: 1000, acquiredAt: 0, renewedAt: 0, metadata: {}, writeId: "w1" },
        null,
      )
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "LeaseStoreError", ambiguous: true });
  });
});

describe("http store: follower cost with a live watch", () => {
  it("a follower whose watch stream is live does not poll every retry period", async () => {
    const name = uniqueName("quiet");
    const http = new HttpStore({ baseUrl: api.url, token: TOKENS.admin });
    const gets: string[] = [];
    const counting = {
      get: (n: string, o?: { signal?: AbortSignal }) => {
        gets.push(n);
        return http.get(n, o);
      },
      put: http.put.bind(http),
      watch: http.watch.bind(http),
    };
    const common = { name, leaseMs: 3000, renewMs: 1000, retryMs: 100, jitter: 0 };
    const leader = new Elector({ ...common, store: http, identity: "leader" });
    const elected = new Promise((resolve) => leader.on("elected", resolve));
    leader.start();
    await elected;
    const leaderSession = (await http.get(name))?.record.session?.name;
    expect(leaderSession).toBeDefined();
    const follower = new Elector({ ...common, store: counting, identity: "follower" });
    follower.start();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Polling every 100 ms would be ~15 reads of each; with the stream live only the reads before
    // it connects happen, and the leader's session is looked at once per pollMs (1 s).
    expect(gets.filter((n) => n === name).length).toBeLessThanOrEqual(3);
    expect(gets.filter((n) => n === leaderSession).length).toBeLessThanOrEqual(3);
    // The rest set up the follower's own session once: a free slot found, then established.
    expect(gets.length).toBeLessThanOrEqual(10);
    expect(follower.current).toMatchObject({ isLeader: false, holder: "leader" });
    await follower.stop();
    await leader.stop();
  });
});

describe("http store: an API that cannot stream (a buffered Lambda integration)", () => {
  it("watch fails once with the API's 501, then yields nothing without asking again; an elector over it takes over by polling", async () => {
    const buffered = inProcessApi({ streams: { unavailable: "this function answers buffered" } });
    const watches: string[] = [];
    const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      const url = String(input instanceof Request ? input.url : input);
      if (url.endsWith("/watch")) watches.push(url);
      return buffered.fetch(input, init);
    }) as typeof globalThis.fetch;
    const store = new HttpStore({ baseUrl: buffered.url, token: TOKENS.admin, fetch });
    const name = uniqueName("buffered");
    const first = await (async () => {
      for await (const _ of store.watch(name, new AbortController().signal)) return undefined;
    })().catch((error: unknown) => error);
    expect(first).toMatchObject({ status: 501, problem: { detail: "this function answers buffered" } });
    for await (const _ of store.watch(name, new AbortController().signal)) throw new Error("expected nothing");
    expect(watches).toHaveLength(1);

    const common = { name, leaseMs: 1000, renewMs: 300, retryMs: 100, jitter: 0 };
    const leader = new Elector({
      ...common,
      store: new HttpStore({ baseUrl: buffered.url, token: TOKENS.admin, fetch }),
      identity: "a",
    });
    const follower = new Elector({ ...common, store, identity: "b" });
    await new Promise((resolve) => {
      leader.on("elected", resolve);
      leader.start();
    });
    const taken = new Promise<{ term: number }>((resolve) => follower.on("elected", resolve));
    follower.start();
    await leader.stop();
    expect(await taken).toMatchObject({ term: 2 });
    await follower.stop();
  });
});
