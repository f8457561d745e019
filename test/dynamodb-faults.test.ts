/**
 * DynamoDbStore when the network misbehaves, through a real HTTP proxy in front of dynalite
 * (test/support/dynamo-proxy.ts): SDK retries of a write that already applied, throttling, 5xx,
 * aborts, and an Elector driven through a lost renewal response on the manual clock.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DynamoDbStore } from "../src/backends/dynamodb/store.js";
import { ManualClock } from "../src/clock.js";
import { LeaseConflictError, LeaseStoreError } from "../src/errors.js";
import { Elector } from "../src/leader/elector.js";
import { casWrite, makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";
import { DynamoProxy } from "./support/dynamo-proxy.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";
import { rejection } from "./support/rejection.js";

const direct = dynamoClient(testEndpoint());
let table = "";
let proxy: DynamoProxy;
const proxied: DynamoDBClient[] = [];

beforeAll(async () => {
  table = await createLeaseTable(direct);
});
afterAll(() => direct.destroy());
beforeEach(async () => {
  proxy = await DynamoProxy.start(testEndpoint());
});
afterEach(async () => {
  for (const c of proxied.splice(0)) c.destroy();
  await proxy.close();
});

/** A store whose requests pass through the proxy; `maxAttempts` is the SDK's (1 = no SDK retry). */
function viaProxy(maxAttempts = 3): DynamoDbStore {
  const client = dynamoClient(proxy.endpoint, { maxAttempts });
  proxied.push(client);
  return new DynamoDbStore({ client, table });
}
const truth = () => new DynamoDbStore({ client: direct, table });

describe("dynamodb: a conflict carries the current item (ALL_OLD, as real DynamoDB answers)", () => {
  it("uses the item from the error and sends no GetItem", async () => {
    const store = viaProxy();
    proxy.returnOldItem = true;
    const name = uniqueName();
    const first = await truth().put(makeRecord(name), null);
    const error = await rejection(store.put(makeRecord(name, { holder: "bob" }), null));
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current).toEqual(first);
    expect(proxy.seen).toEqual(["PutItem"]);
  });

  it("reports its own retried write from the item in the error, with no GetItem; the write path counts it applied", async () => {
    const store = viaProxy();
    proxy.returnOldItem = true;
    const name = uniqueName();
    const record = makeRecord(name);
    proxy.failNextPut("drop-response");
    const error = await rejection(store.put(record, null));
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current).toEqual({ record, revision: "1" });
    expect(proxy.seen).toEqual(["PutItem", "PutItem"]);
    const retried = makeRecord(uniqueName());
    proxy.failNextPut("drop-response");
    expect(await casWrite(store, retried, null)).toMatchObject({
      kind: "applied",
      stored: { record: retried, revision: "1" },
    });
  });
});

describe("dynamodb: SDK retries of a write that already applied", () => {
  it("a create whose response was lost is retried by the SDK: a conflict carrying it, which the write path counts applied", async () => {
    const store = viaProxy();
    const name = uniqueName();
    const record = makeRecord(name);
    proxy.failNextPut("drop-response");
    const outcome = await casWrite(store, record, null);
    // Two PutItems reached the server: the first applied, the SDK's retry failed its own condition.
    expect(proxy.count("PutItem")).toBe(2);
    expect(outcome).toMatchObject({ kind: "applied", stored: { record, revision: "1" } });
    expect(await truth().get(name)).toEqual({ record, revision: "1" });
  });

  it("a replace that applied but was answered with throttling is counted applied, with the new revision", async () => {
    const store = viaProxy();
    const name = uniqueName();
    const first = await truth().put(makeRecord(name), null);
    const next = makeRecord(name, { renewedAt: first.record.renewedAt + 1 });
    proxy.failNextPut("throttle-after-apply");
    const outcome = await casWrite(store, next, first.revision);
    expect(proxy.count("PutItem")).toBe(2);
    expect(outcome).toMatchObject({ kind: "applied", stored: { record: next, revision: "2" } });
    expect(await truth().get(name)).toEqual({ record: next, revision: "2" });
  });

  it("a retried write against a revision someone else replaced is a genuine conflict carrying their record", async () => {
    const store = viaProxy();
    const name = uniqueName();
    const first = await truth().put(makeRecord(name), null);
    const theirs = await truth().put(makeRecord(name, { holder: "bob", term: 2 }), first.revision);
    proxy.failNextPut("server-error"); // first attempt never reaches dynalite; the retry is rejected
    const error = await rejection(store.put(makeRecord(name, { renewedAt: 5 }), first.revision));
    expect(proxy.count("PutItem")).toBe(2);
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current).toEqual(theirs);
  });

  it("a renewing Elector keeps leading through a lost acquisition response and a lost renewal response", async () => {
    const store = viaProxy();
    const tracked = new TrackedStore(store);
    const clock = new ManualClock({ idle: () => tracked.settle() });
    const name = uniqueName("elect");
    const elector = new Elector({
      store: tracked,
      name,
      identity: "a",
      leaseMs: 1000,
      renewMs: 300,
      retryMs: 100,
      safetyMs: 100,
      jitter: 0,
      clock,
      // Its own record, renewed: every PutItem here is the lease's (a bound lease writes its session's).
      session: false,
    });
    const events: string[] = [];
    elector.on("elected", (e) => events.push(`elected ${e.term} @${clock.now()}`));
    elector.on("renewed", (e) => events.push(`renewed ${e.revision} @${clock.now()}`));
    elector.on("deposed", (e) => events.push(`deposed ${e.reason} @${clock.now()}`));
    elector.on("error", (e) => events.push(`error ${String(e.error)}`));
    try {
      proxy.failNextPut("drop-response");
      elector.start();
      await clock.advance(0);
      expect(events).toEqual(["elected 1 @0"]);
      proxy.failNextPut("drop-response");
      await clock.advance(300);
      expect(events).toEqual(["elected 1 @0", "renewed 2 @300"]);
      await clock.advance(900);
      expect(events).toEqual(["elected 1 @0", "renewed 2 @300", "renewed 3 @600", "renewed 4 @900", "renewed 5 @1200"]);
      expect(elector.current).toMatchObject({ isLeader: true, term: 1, lastRenewalSentAt: 1200 });
      // Exactly one extra PutItem per lost response, and no reads beyond the conflicts' fallbacks.
      expect(proxy.count("PutItem")).toBe(7);
      expect((await truth().get(name))?.record).toMatchObject({ holder: "a", term: 1 });
    } finally {
      await elector.stop({ release: false });
    }
  });
});

describe("dynamodb: throttling, server errors and aborts", () => {
  it("throttling on every attempt is ambiguous, and nothing was written", async () => {
    const store = viaProxy(2);
    const name = uniqueName();
    proxy.failNextPut("throttle", "throttle");
    const error = await rejection(store.put(makeRecord(name), null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect((error as LeaseStoreError).ambiguous).toBe(true);
    expect((error as LeaseStoreError).message).toMatch(/PutItem .*throttled, 2 attempts.*ThrottlingException/);
    expect(await truth().get(name)).toBeNull();
  });

  it("throttling then success: the SDK's retry of a rejected attempt just applies", async () => {
    const store = viaProxy(2);
    const name = uniqueName();
    proxy.failNextPut("throttle");
    const stored = await store.put(makeRecord(name), null);
    expect(stored.revision).toBe("1");
    expect(await truth().get(name)).toEqual(stored);
  });

  it("a 5xx on a write is ambiguous even on a single attempt", async () => {
    const store = viaProxy(1);
    proxy.failNextPut("server-error");
    const error = await rejection(store.put(makeRecord(uniqueName()), null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect((error as LeaseStoreError).ambiguous).toBe(true);
    expect((error as LeaseStoreError).message).toMatch(/HTTP 500.*InternalServerError.*may or may not have applied/);
  });

  it("a lost response with no SDK retry left is ambiguous", async () => {
    const store = viaProxy(1);
    const name = uniqueName();
    proxy.failNextPut("drop-response");
    const error = await rejection(store.put(makeRecord(name), null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect((error as LeaseStoreError).ambiguous).toBe(true);
    // It did apply: exactly the case the elector resolves by writeId on its next read.
    expect((await truth().get(name))?.revision).toBe("1");
  });

  it("aborting a hanging write through options.signal rejects at once as ambiguous", async () => {
    const store = viaProxy(1);
    proxy.failNextPut("hang");
    const abort = new AbortController();
    const pending = rejection(store.put(makeRecord(uniqueName()), null, { signal: abort.signal }));
    await proxy.waitFor("PutItem");
    abort.abort();
    const error = await pending;
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect((error as LeaseStoreError).ambiguous).toBe(true);
    expect((error as LeaseStoreError).message).toContain("aborted");
  });

  it("aborting a read rejects it, not ambiguous (a read changes nothing)", async () => {
    const store = viaProxy(1);
    const abort = new AbortController();
    abort.abort();
    const error = await rejection(store.get(uniqueName(), { signal: abort.signal }));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect((error as LeaseStoreError).ambiguous).toBe(false);
  });
});

describe("dynamodb: getMany is BatchGetItem of up to 100 keys, unprocessed keys asked again", () => {
  it("reads 230 leases in three requests, each as GetItem would, null where none exists", async () => {
    const store = viaProxy();
    const root = uniqueName("many");
    const names = Array.from({ length: 230 }, (_, i) => `${root}/${String(i).padStart(3, "0")}`);
    const written = await Promise.all(names.slice(0, 200).map((n) => truth().put(makeRecord(n), null)));
    const read = await store.getMany([...names].reverse());
    expect(read).toEqual([...written, ...names.slice(200).map(() => null)].reverse());
    expect(proxy.count("BatchGetItem")).toBe(3);
    expect(proxy.count("GetItem")).toBe(0);
  });

  it("keys DynamoDB leaves unprocessed are asked for again until none is left", async () => {
    const store = viaProxy();
    const root = uniqueName("unprocessed");
    const names = Array.from({ length: 10 }, (_, i) => `${root}/${i}`);
    const written = await Promise.all(names.map((n) => truth().put(makeRecord(n), null)));
    proxy.unprocessed.push(7, 3);
    expect(await store.getMany(names)).toEqual(written);
    expect(proxy.count("BatchGetItem")).toBe(3);
  });

  it("keys still unprocessed after six requests fail the read, naming how many, not ambiguous", async () => {
    const store = viaProxy();
    const root = uniqueName("throttled");
    const names = Array.from({ length: 4 }, (_, i) => `${root}/${i}`);
    await Promise.all(names.map((n) => truth().put(makeRecord(n), null)));
    proxy.unprocessed.push(2, 2, 2, 2, 2, 2);
    const error = await rejection(store.getMany(names));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect((error as LeaseStoreError).message).toContain("2 of 4 keys still unprocessed after 6 requests");
    expect((error as LeaseStoreError).ambiguous).toBe(false);
    expect(proxy.count("BatchGetItem")).toBe(6);
  });
});
