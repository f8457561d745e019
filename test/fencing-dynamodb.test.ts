/**
 * docs/fencing.md, DynamoDB, against dynalite: the recipe (examples/fencing/dynamodb.ts) and the
 * helpers (src/fencing/dynamodb.ts). Each shows a stale leader's write refused after a newer term
 * wrote, an equal term allowed, and what the caller sees. Through the proxy that adds ALL_OLD's item
 * (as real DynamoDB does, dynalite does not) the refusal carries the item's term.
 */
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { saveReport, saveReportWithHelper } from "../examples/fencing/dynamodb.js";
import { LeaseValidationError } from "../src/errors.js";
import {
  FenceCorruptError,
  fencedPutItem,
  fencedUpdateItem,
  fenceExpression,
  StaleTermError,
  withSet,
} from "../src/fencing/dynamodb.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { deposedLeaderWrites } from "./support/deposed-leader.js";
import { DynamoProxy } from "./support/dynamo-proxy.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";
import { rejection } from "./support/rejection.js";

const client = dynamoClient(testEndpoint());
let table = "";
let proxy: DynamoProxy;
let viaProxy: ReturnType<typeof dynamoClient>;
beforeAll(async () => {
  table = await createLeaseTable(client);
  proxy = await DynamoProxy.start(testEndpoint());
  proxy.returnOldItem = true;
  viaProxy = dynamoClient(proxy.endpoint, { maxAttempts: 1 });
});
afterAll(async () => {
  client.destroy();
  viaProxy?.destroy();
  await proxy?.close();
});

const item = async (id: string) =>
  (await client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: id } }, ConsistentRead: true }))).Item;

describe("DynamoDB recipe (examples/fencing/dynamodb.ts)", () => {
  it("the first write creates the item with its term; a newer term overwrites; an older one is refused", async () => {
    const id = uniqueName("report");
    expect(await saveReport(client, table, id, "by term 1", 1)).toBe(true);
    expect(await saveReport(client, table, id, "by term 2", 2)).toBe(true);
    // The deposed leader of term 1 wakes up and writes: ConditionalCheckFailedException, seen as false.
    expect(await saveReport(client, table, id, "late, by term 1", 1)).toBe(false);
    expect(await item(id)).toEqual({ pk: { S: id }, body: { S: "by term 2" }, term: { N: "2" } });
    // The leader of term 2 may repeat its own write.
    expect(await saveReport(client, table, id, "again by term 2", 2)).toBe(true);
    expect((await item(id))?.body).toEqual({ S: "again by term 2" });
  });

  it("with terms from the library: the deposed leader's write is refused after the new leader's", async () => {
    const id = uniqueName("report");
    const outcome = await deposedLeaderWrites(async (writer, term) => {
      if (!(await saveReport(client, table, id, `by ${writer}`, term))) throw new Error(`refused: ${writer} ${term}`);
    });
    expect(outcome).toMatchObject({ oldTerm: 1, newTerm: 2, oldSignalAborted: true });
    expect(outcome.staleError).toEqual(new Error("refused: old 1"));
    expect(await item(id)).toEqual({ pk: { S: id }, body: { S: "by new" }, term: { N: "2" } });
  });

  it("the helper form throws StaleTermError", async () => {
    const id = uniqueName("report");
    await saveReportWithHelper(client, table, id, "by term 3", 3);
    const error = await rejection(saveReportWithHelper(client, table, id, "by term 2", 2));
    expect(error).toBeInstanceOf(StaleTermError);
    expect(await item(id)).toEqual({ pk: { S: id }, body: { S: "by term 3" }, fenceTerm: { N: "3" } });
  });
});

describe("fencedPutItem", () => {
  it("refuses an older term with StaleTermError; seenTerm is the item's term when DynamoDB returns the item", async () => {
    const id = uniqueName("put");
    const put = (c: typeof client, term: number, body: string) =>
      fencedPutItem(c, { TableName: table, Item: { pk: { S: id }, body: { S: body } } }, { term });
    await put(client, 5, "five");
    // dynalite omits ALL_OLD's item: refused all the same, the term seen is unknown.
    const bare = await rejection(put(client, 4, "four"));
    expect(bare).toBeInstanceOf(StaleTermError);
    expect(bare).toMatchObject({ name: "StaleTermError", term: 4, seenTerm: undefined });
    expect((bare as Error).message).toContain(`DynamoDB table "${table}"`);
    // As real DynamoDB answers (the proxy adds the item): the error names the term it holds.
    const full = await rejection(put(viaProxy, 4, "four"));
    expect(full).toMatchObject({ name: "StaleTermError", term: 4, seenTerm: 5 });
    expect((full as Error).message).toContain("it holds term 5, newer than this writer's term 4");
    expect((full as Error).cause).toMatchObject({ name: "ConditionalCheckFailedException" });
    expect(await item(id)).toEqual({ pk: { S: id }, body: { S: "five" }, fenceTerm: { N: "5" } });
    await put(client, 5, "five again");
    await put(viaProxy, 6, "six");
    expect(await item(id)).toEqual({ pk: { S: id }, body: { S: "six" }, fenceTerm: { N: "6" } });
  });

  it("ANDs the caller's own condition; its failure stays the SDK's error when the fence passed", async () => {
    const id = uniqueName("put");
    const input = (body: string, version: number) => ({
      TableName: table,
      Item: { pk: { S: id }, body: { S: body }, version: { N: String(version + 1) } },
      ConditionExpression: "attribute_not_exists(version) OR version = :v",
      ExpressionAttributeValues: { ":v": { N: String(version) } },
    });
    await fencedPutItem(viaProxy, input("first", 0), { term: 1 });
    // Fence passes (1 <= 1), the caller's version check does not: not a StaleTermError.
    const own = await rejection(fencedPutItem(viaProxy, input("stale version", 0), { term: 1 }));
    expect(own).toMatchObject({ name: "ConditionalCheckFailedException" });
    expect(own).not.toBeInstanceOf(StaleTermError);
    await fencedPutItem(viaProxy, input("second", 1), { term: 2 });
    // Both fail: the fence is reported.
    expect(await rejection(fencedPutItem(viaProxy, input("stale both", 0), { term: 1 }))).toMatchObject({
      name: "StaleTermError",
      seenTerm: 2,
    });
    expect(await item(id)).toMatchObject({ body: { S: "second" }, version: { N: "2" }, fenceTerm: { N: "2" } });
  });

  it("a fence attribute that is not a number is FenceCorruptError, never overwritten", async () => {
    const id = uniqueName("put");
    await client.send(
      new (await import("@aws-sdk/client-dynamodb")).PutItemCommand({
        TableName: table,
        Item: { pk: { S: id }, fenceTerm: { S: "seven" } },
      }),
    );
    const error = await rejection(
      fencedPutItem(viaProxy, { TableName: table, Item: { pk: { S: id }, body: { S: "x" } } }, { term: 9 }),
    );
    expect(error).toBeInstanceOf(FenceCorruptError);
    expect((error as Error).message).toContain("is not a term");
    expect(await item(id)).toEqual({ pk: { S: id }, fenceTerm: { S: "seven" } });
  });

  it("rejects bad input naming the field, and sends nothing", async () => {
    const before = proxy.count("PutItem");
    const cases: Array<[unknown, unknown, string]> = [
      [{ TableName: table, Item: { pk: { S: "x" } } }, { term: 0 }, "options.term: expected a term >= 1"],
      [{ TableName: table, Item: { pk: { S: "x" } } }, { term: 1.5 }, "options.term: expected a whole number"],
      [{ TableName: table, Item: { pk: { S: "x" } } }, { term: "2" }, "options.term: expected the leader's term"],
      [{ TableName: table, Item: { pk: { S: "x" } } }, { term: 1, attribute: "" }, "options.attribute"],
      [{ Item: { pk: { S: "x" } } }, { term: 1 }, "input.TableName: expected a table name"],
      [{ TableName: table }, { term: 1 }, "input.Item: expected the item to write"],
      [
        { TableName: table, Item: { pk: { S: "x" }, fenceTerm: { N: "1" } } },
        { term: 2 },
        "input.Item.fenceTerm: is the fence attribute",
      ],
      [
        { TableName: table, Item: { pk: { S: "x" } }, ExpressionAttributeNames: { "#leaseholdFence": "a" } },
        { term: 1 },
        "input.ExpressionAttributeNames.#leaseholdFence: is reserved for the fence",
      ],
    ];
    for (const [input, options, message] of cases) {
      const error = await rejection(fencedPutItem(viaProxy, input as never, options as never));
      expect(error).toBeInstanceOf(LeaseValidationError);
      expect((error as Error).message).toContain(message);
    }
    expect(proxy.count("PutItem")).toBe(before);
  });
});

describe("fencedUpdateItem", () => {
  it("adds the fence to the SET clause; creates an absent item; refuses an older term with the item's term", async () => {
    const id = uniqueName("update");
    const key = { pk: { S: id } };
    const add = (c: typeof client, term: number) =>
      fencedUpdateItem(
        c,
        {
          TableName: table,
          Key: key,
          UpdateExpression: "ADD #count :one SET body = :body",
          ExpressionAttributeNames: { "#count": "count" },
          ExpressionAttributeValues: { ":one": { N: "1" }, ":body": { S: `term ${term}` } },
          ReturnValues: "ALL_NEW",
        },
        { term },
      );
    const created = await add(client, 1);
    expect(created.Attributes).toEqual({
      pk: { S: id },
      count: { N: "1" },
      body: { S: "term 1" },
      fenceTerm: { N: "1" },
    });
    await add(client, 3);
    const stale = await rejection(add(viaProxy, 2));
    expect(stale).toMatchObject({ name: "StaleTermError", term: 2, seenTerm: 3 });
    expect((stale as Error).message).toContain(`DynamoDB table "${table}" item {pk=${id}}`);
    expect(await item(id)).toEqual({ pk: { S: id }, count: { N: "2" }, body: { S: "term 3" }, fenceTerm: { N: "3" } });
  });

  it("with no update expression of the caller's, only the fence moves (a new leader claiming an item)", async () => {
    const id = uniqueName("update");
    await fencedUpdateItem(client, { TableName: table, Key: { pk: { S: id } } }, { term: 4, attribute: "owner_term" });
    expect(await item(id)).toEqual({ pk: { S: id }, owner_term: { N: "4" } });
    const stale = await rejection(
      fencedUpdateItem(client, { TableName: table, Key: { pk: { S: id } } }, { term: 3, attribute: "owner_term" }),
    );
    expect(stale).toMatchObject({ name: "StaleTermError", term: 3 });
  });

  it("rejects AttributeUpdates and a missing Key, sending nothing", async () => {
    for (const [input, message] of [
      [{ TableName: table }, "input.Key"],
      [{ TableName: table, Key: { pk: { S: "x" } }, AttributeUpdates: {} }, "input.AttributeUpdates"],
    ] as const) {
      const error = await rejection(fencedUpdateItem(client, input as never, { term: 1 }));
      expect(error).toBeInstanceOf(LeaseValidationError);
      expect((error as Error).message).toContain(message);
    }
  });
});

describe("fenceExpression and withSet", () => {
  it("gives the parts to merge into a command of your own", () => {
    expect(fenceExpression({ term: 7 })).toEqual({
      condition: "(attribute_not_exists(#leaseholdFence) OR #leaseholdFence <= :leaseholdFence)",
      set: "#leaseholdFence = :leaseholdFence",
      names: { "#leaseholdFence": "fenceTerm" },
      values: { ":leaseholdFence": { N: "7" } },
    });
    expect(() => fenceExpression({ term: -1 })).toThrow(LeaseValidationError);
  });

  it("adds the assignment to the one SET clause, whatever the clause order and placeholder names", () => {
    const f = "#f = :f";
    expect(withSet(undefined, f)).toBe("SET #f = :f");
    expect(withSet("  ", f)).toBe("SET #f = :f");
    expect(withSet("SET a = :a", f)).toBe("SET #f = :f, a = :a");
    expect(withSet("set a = :a REMOVE b", f)).toBe("set #f = :f, a = :a REMOVE b");
    expect(withSet("ADD #set :one SET #x = :set", f)).toBe("ADD #set :one SET #f = :f, #x = :set");
    expect(withSet("REMOVE #settings", f)).toBe("REMOVE #settings SET #f = :f");
    expect(withSet("ADD reset_count :one", f)).toBe("ADD reset_count :one SET #f = :f");
  });
});
