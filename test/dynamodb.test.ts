/**
 * DynamoDbStore against dynalite (started once per run by test/servers/dynalite.server.ts): both
 * conformance suites, the item layout, corrupt items, TTL stamping, paginated listing and option
 * validation. Network faults and SDK retries are in dynamodb-faults.test.ts.
 */
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_TTL_GRACE_SECONDS, DynamoDbStore } from "../src/backends/dynamodb/store.js";
import { ManualClock } from "../src/clock.js";
import { LeaseConflictError, LeaseCorruptError, LeaseStoreError, LeaseValidationError } from "../src/errors.js";
import { Elector } from "../src/leader/elector.js";
import type { Listed } from "../src/lease.js";
import { isUnreadable, listedName, readable } from "../src/listing.js";
import { describeBoundContract } from "../src/testkit/bound-contract.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeShardedContract } from "../src/testkit/sharded-contract.js";
import { describeStoreContract, makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";

const client = dynamoClient(testEndpoint());
let table = "";
beforeAll(async () => {
  table = await createLeaseTable(client);
});
afterAll(() => client.destroy());

const create = async () => ({ store: new DynamoDbStore({ client, table }) });
// conflictCarriesCurrent: dynalite omits ALL_OLD's item, so the store reads it (real DynamoDB sends it).
describeStoreContract("dynamodb (dynalite)", {
  create,
  conflictCarriesCurrent: true,
  // A record whose term is text (a foreign tool's write), at a sound revision.
  plantUnreadable: async (name) => {
    await client.send(
      new PutItemCommand({
        TableName: table,
        Item: { pk: { S: name }, rev: { N: "4" }, term: { S: "four" }, holder: { S: "ghost" } },
      }),
    );
  },
});
describeElectorContract("dynamodb (dynalite)", create);
describeBoundContract("dynamodb (dynalite)", create);
describeShardedContract("dynamodb (dynalite)", create);

const rawGet = async (name: string, tableName = table) =>
  (await client.send(new GetItemCommand({ TableName: tableName, Key: { pk: { S: name } }, ConsistentRead: true })))
    .Item;

describe("dynamodb item layout", () => {
  it("stores one item per lease: the key, a numeric rev and the record's fields as attributes", async () => {
    const store = new DynamoDbStore({ client, table });
    const name = uniqueName();
    const record = makeRecord(name, { holder: null, metadata: { addr: "10.0.0.7:8080" } });
    const stored = await store.put(record, null);
    expect(stored.revision).toBe("1");
    expect(await rawGet(name)).toEqual({
      pk: { S: name },
      rev: { N: "1" },
      holder: { NULL: true },
      term: { N: "1" },
      leaseMs: { N: "15000" },
      acquiredAt: { N: String(record.acquiredAt) },
      renewedAt: { N: String(record.renewedAt) },
      metadata: { M: { addr: { S: "10.0.0.7:8080" } } },
      writeId: { S: record.writeId },
    });
    const next = await store.put(makeRecord(name, { term: 2 }), stored.revision);
    expect(next.revision).toBe("2");
    expect((await rawGet(name))?.rev).toEqual({ N: "2" });
  });

  it("re-sending a write that already applied, or another write reusing its writeId, conflicts carrying the current item", async () => {
    const store = new DynamoDbStore({ client, table });
    const name = uniqueName();
    const record = makeRecord(name);
    const first = await store.put(record, null);
    for (const again of [record, { ...record, holder: "bob" }]) {
      const error = await store.put(again, null).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseConflictError);
      expect((error as LeaseConflictError).current).toEqual(first);
    }
  });

  it("uses the configured partition key attribute", async () => {
    const keyed = await createLeaseTable(client, "leaseName");
    const store = new DynamoDbStore({ client, table: keyed, partitionKey: "leaseName" });
    const name = uniqueName();
    const stored = await store.put(makeRecord(name), null);
    expect(await store.get(name)).toEqual(stored);
    const item = (
      await client.send(new GetItemCommand({ TableName: keyed, Key: { leaseName: { S: name } }, ConsistentRead: true }))
    ).Item;
    expect(item?.rev).toEqual({ N: "1" });
  });

  it("stamps the opt-in TTL attribute at renewedAt + leaseMs + grace, in epoch seconds, on every write", async () => {
    const store = new DynamoDbStore({ client, table, ttlAttribute: "expiresAt" });
    const name = uniqueName();
    const record = makeRecord(name, { renewedAt: 1_700_000_000_500, leaseMs: 15_000 });
    const first = await store.put(record, null);
    expect((await rawGet(name))?.expiresAt).toEqual({ N: String(1_700_000_016 + DEFAULT_TTL_GRACE_SECONDS) });
    await store.put(makeRecord(name, { renewedAt: 1_700_000_100_000, leaseMs: 20_000 }), first.revision);
    expect((await rawGet(name))?.expiresAt).toEqual({ N: String(1_700_000_120 + DEFAULT_TTL_GRACE_SECONDS) });
    expect((await store.get(name))?.record.renewedAt).toBe(1_700_000_100_000);

    const graced = new DynamoDbStore({ client, table, ttlAttribute: "expiresAt", ttlGraceSeconds: 86_400 });
    const other = uniqueName();
    await graced.put(makeRecord(other, { renewedAt: 1_700_000_000_000, leaseMs: 15_000 }), null);
    expect((await rawGet(other))?.expiresAt).toEqual({ N: String(1_700_000_015 + 86_400) });
  });

  it("writes no TTL attribute unless asked", async () => {
    const store = new DynamoDbStore({ client, table });
    const name = uniqueName();
    await store.put(makeRecord(name), null);
    expect(Object.keys((await rawGet(name)) ?? {}).sort()).toEqual(
      ["acquiredAt", "holder", "leaseMs", "metadata", "pk", "renewedAt", "rev", "term", "writeId"].sort(),
    );
  });

  it("lists across many Scan pages, in name order, with startAfter and limit", async () => {
    const store = new DynamoDbStore({ client, table, scanPageSize: 2 });
    const root = uniqueName("paged");
    const names = Array.from({ length: 9 }, (_, i) => `${root}/n${(i * 7) % 9}`);
    for (const n of names) await store.put(makeRecord(n), null);
    await store.put(makeRecord(`${root}x/outside`), null); // shares the text prefix without the slash
    const list = async (prefix: string, o?: { startAfter?: string; limit?: number }) => {
      const out: string[] = [];
      for await (const s of store.list(prefix, o)) out.push(listedName(s));
      return out;
    };
    const sorted = [...names].sort();
    expect(await list(`${root}/`)).toEqual(sorted);
    expect(await list(`${root}/`, { startAfter: sorted[3]!, limit: 3 })).toEqual(sorted.slice(4, 7));
    expect(await list(`${root}/`, { limit: 0 })).toEqual([]);
    expect((await list("")).length).toBeGreaterThanOrEqual(10);
  });
});

describe("dynamodb corrupt and foreign items", () => {
  const putRaw = (name: string, item: Record<string, unknown>) =>
    client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: name }, ...item } as never }));
  const validItem = (name: string) => ({
    rev: { N: "3" },
    holder: { S: "alice" },
    term: { N: "2" },
    leaseMs: { N: "1000" },
    acquiredAt: { N: "1" },
    renewedAt: { N: "2" },
    metadata: { M: {} },
    writeId: { S: `w-${name.length}` },
  });

  const corruptOf = async (p: Promise<unknown>) => {
    const error = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LeaseCorruptError);
    return error as LeaseCorruptError;
  };

  it("a valid raw item reads back (the layout is the documented one)", async () => {
    const name = uniqueName();
    await putRaw(name, validItem(name));
    const stored = await new DynamoDbStore({ client, table }).get(name);
    expect(stored).toEqual({
      revision: "3",
      record: {
        name,
        holder: "alice",
        term: 2,
        leaseMs: 1000,
        acquiredAt: 1,
        renewedAt: 2,
        metadata: {},
        writeId: `w-${name.length}`,
      },
    });
  });

  it("names each bad attribute: wrong types, a foreign item without the fields or rev", async () => {
    const store = new DynamoDbStore({ client, table });
    const mistyped = uniqueName();
    await putRaw(mistyped, { ...validItem(mistyped), term: { S: "two" } });
    expect((await corruptOf(store.get(mistyped))).issues).toEqual([{ path: "term", message: "expected a number" }]);

    const foreign = uniqueName();
    await putRaw(foreign, { owner: { S: "some other app" } });
    expect((await corruptOf(store.get(foreign))).issues).toEqual([
      { path: "rev", message: "expected a positive whole number attribute (N)" },
    ]);

    const noRev = uniqueName();
    const { rev: _rev, ...fields } = validItem(noRev);
    await putRaw(noRev, fields);
    expect((await corruptOf(store.get(noRev))).issues.map((i) => i.path)).toEqual(["rev"]);

    const missing = uniqueName();
    const { writeId: _writeId, ...partial } = validItem(missing);
    await putRaw(missing, partial);
    expect((await corruptOf(store.get(missing))).issues.map((i) => i.path)).toEqual(["writeId"]);

    const binary = uniqueName();
    await putRaw(binary, { ...validItem(binary), holder: { B: new Uint8Array([1, 2]) } });
    expect((await corruptOf(store.get(binary))).issues[0]?.path).toBe("holder");
  });

  it("attributes leasehold does not write (a TTL left from when it was on) are ignored, then dropped by the next write", async () => {
    const name = uniqueName();
    await putRaw(name, { ...validItem(name), expiresAt: { N: "1700000000" } });
    const store = new DynamoDbStore({ client, table });
    const stored = await store.get(name);
    expect(stored?.record.holder).toBe("alice");
    await store.put({ ...stored!.record, writeId: "next" }, stored!.revision);
    expect((await rawGet(name))?.expiresAt).toBeUndefined();
  });

  it("a corrupt item is never overwritten: not by a create, not by an elector campaigning for it", async () => {
    const name = uniqueName();
    await putRaw(name, { ...validItem(name), leaseMs: { N: "-5" } });
    const before = await rawGet(name);
    const store = new DynamoDbStore({ client, table });
    await corruptOf(store.put(makeRecord(name), null));

    const tracked = new TrackedStore(store);
    const clock = new ManualClock({ idle: () => tracked.settle() });
    const elector = new Elector({ store: tracked, name, identity: "a", leaseMs: 1000, clock, jitter: 0 });
    const errors: unknown[] = [];
    elector.on("error", (e) => errors.push(e.error));
    elector.start();
    await clock.advance(5000);
    await elector.stop({ release: false });
    expect(elector.current.isLeader).toBe(false);
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) expect(e).toBeInstanceOf(LeaseCorruptError);
    expect(await rawGet(name)).toEqual(before);
  });

  it("a corrupt item inside a listing is reported in its place, never skipped, and the rest is listed", async () => {
    const store = new DynamoDbStore({ client, table });
    const root = uniqueName("mixed");
    await store.put(makeRecord(`${root}/a`), null);
    await putRaw(`${root}/b`, { rev: { N: "1" } });
    await store.put(makeRecord(`${root}/c`), null);
    const listed: Listed[] = [];
    for await (const s of store.list(`${root}/`)) listed.push(s);
    expect(listed.map(listedName)).toEqual([`${root}/a`, `${root}/b`, `${root}/c`]);
    const b = listed[1]!;
    expect(isUnreadable(b) && b.unreadable).toBeInstanceOf(LeaseCorruptError);
    expect(isUnreadable(b) && b.revision).toBe("1");
    // A caller that needs every record (a sharded group's) still meets the error.
    await corruptOf(
      (async () => {
        for await (const _ of readable(store.list(`${root}/`))) {
          // drain
        }
      })(),
    );
  });
});

describe("dynamodb options and request errors", () => {
  const issuesOf = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(LeaseValidationError);
      return (error as LeaseValidationError).issues.map((i) => i.path);
    }
    throw new Error("expected a LeaseValidationError");
  };

  it("rejects bad options, naming each field", () => {
    expect(issuesOf(() => new DynamoDbStore({ client, table: "x" }))).toEqual(["table"]);
    expect(issuesOf(() => new DynamoDbStore({ client: {} as never, table }))).toEqual(["client"]);
    expect(issuesOf(() => new DynamoDbStore({ client, table, partitionKey: "rev" }))).toEqual(["partitionKey"]);
    expect(issuesOf(() => new DynamoDbStore({ client, table, ttlAttribute: "pk" }))).toEqual(["ttlAttribute"]);
    expect(issuesOf(() => new DynamoDbStore({ client, table, ttlAttribute: "exp", ttlGraceSeconds: 3600 }))).toEqual([
      "ttlGraceSeconds",
    ]);
    expect(issuesOf(() => new DynamoDbStore({ client, table, ttlGraceSeconds: 86_400 }))).toEqual(["ttlGraceSeconds"]);
    expect(issuesOf(() => new DynamoDbStore({ client, table, scanPageSize: 0 }))).toEqual(["scanPageSize"]);
  });

  it("rejects a revision it did not issue before sending anything", async () => {
    const store = new DynamoDbStore({ client, table });
    await expect(store.put(makeRecord(uniqueName()), "abc")).rejects.toBeInstanceOf(LeaseValidationError);
  });

  it("a missing table is a clear, non-ambiguous error on writes and reads", async () => {
    const store = new DynamoDbStore({ client, table: "no-such-table" });
    const name = uniqueName();
    const write = await store.put(makeRecord(name), null).catch((e: unknown) => e);
    expect(write).toBeInstanceOf(LeaseStoreError);
    expect((write as LeaseStoreError).ambiguous).toBe(false);
    expect((write as LeaseStoreError).message).toMatch(
      /DynamoDB PutItem on table "no-such-table" .*ResourceNotFoundException.*nothing was written/,
    );
    const read = await store.get(name).catch((e: unknown) => e);
    expect(read).toBeInstanceOf(LeaseStoreError);
    expect((read as LeaseStoreError).ambiguous).toBe(false);
    expect((read as LeaseStoreError).message).toContain("GetItem");
  });
});
