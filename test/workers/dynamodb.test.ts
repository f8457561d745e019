/**
 * DynamoDB from inside workerd: the AWS SDK v3 (over fetch) against dynalite, which
 * global-setup.ts started on the Node side. The store contract on DynamoDbStore, and the Worker
 * entry configured with LEASEHOLD_STORE=dynamodb://... and AWS keys as it would be from secrets.
 */

import { env } from "cloudflare:workers";
import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, expect, it } from "vitest";
import { DynamoDbStore } from "../../src/backends/dynamodb/store.js";
import { LeaseholdClient } from "../../src/http/client.js";
import worker from "../../src/runtime/worker.js";
import { describeStoreContract, uniqueName } from "../../src/testkit/store-contract.js";
import { WRITER } from "./tokens.js";

const client = new DynamoDBClient({
  endpoint: env.DYNAMODB_ENDPOINT,
  region: "us-east-1",
  credentials: { accessKeyId: "leasehold-test", secretAccessKey: "leasehold-test" },
});
afterAll(() => client.destroy());

// conflictCarriesCurrent: dynalite omits ALL_OLD's item, so the store reads it (real DynamoDB sends it).
describeStoreContract("dynamodb from workerd (dynalite)", {
  create: async () => ({ store: new DynamoDbStore({ client, table: env.DYNAMODB_TABLE }) }),
  conflictCarriesCurrent: true,
  // A record whose term is text (a foreign tool's write), at a sound revision.
  plantUnreadable: async (name) => {
    await client.send(
      new PutItemCommand({
        TableName: env.DYNAMODB_TABLE,
        Item: { pk: { S: name }, rev: { N: "4" }, term: { S: "four" }, holder: { S: "ghost" } },
      }),
    );
  },
});

it("the Worker serves the API on DynamoDB when LEASEHOLD_STORE names a table", async () => {
  const bindings = {
    LEASEHOLD_TOKENS: env.LEASEHOLD_TOKENS,
    LEASEHOLD_STORE: `dynamodb://${env.DYNAMODB_TABLE}?region=us-east-1&endpoint=${encodeURIComponent(env.DYNAMODB_ENDPOINT)}`,
    AWS_ACCESS_KEY_ID: "leasehold-test",
    AWS_SECRET_ACCESS_KEY: "leasehold-test",
  };
  const api = new LeaseholdClient({
    baseUrl: "https://leasehold.test",
    token: WRITER,
    retries: 0,
    fetch: (input, init) => worker.fetch(new Request(input, init), bindings),
  });
  const name = uniqueName("dynamo");
  const acquired = await api.acquire(name, { holder: "a", leaseMs: 10_000 });
  expect(acquired).toMatchObject({ leader: true, lease: { name, holder: "a", term: 1, revision: "1" } });
  await api.release(name, { holder: "a", term: 1 });
  // The record is in the table, not in a Durable Object: read it back with the SDK directly.
  const direct = await new DynamoDbStore({ client, table: env.DYNAMODB_TABLE }).get(name);
  expect(direct?.record).toMatchObject({ holder: null, term: 1 });
  expect(direct?.revision).toBe("2");
  const listed = await api.list({ prefix: name });
  expect(listed.leases.map((l) => l.name)).toEqual([name]);
});

it("AWS_REGION or AWS_DEFAULT_REGION gives the region when the URL has none", async () => {
  for (const variable of ["AWS_REGION", "AWS_DEFAULT_REGION"]) {
    const bindings = {
      LEASEHOLD_TOKENS: env.LEASEHOLD_TOKENS,
      LEASEHOLD_STORE: `dynamodb://${env.DYNAMODB_TABLE}?endpoint=${encodeURIComponent(env.DYNAMODB_ENDPOINT)}`,
      AWS_ACCESS_KEY_ID: "leasehold-test",
      AWS_SECRET_ACCESS_KEY: "leasehold-test",
      AWS_SESSION_TOKEN: "leasehold-test-session",
      [variable]: "us-east-1",
    };
    const api = new LeaseholdClient({
      baseUrl: "https://leasehold.test",
      token: WRITER,
      retries: 0,
      fetch: (input, init) => worker.fetch(new Request(input, init), bindings),
    });
    const name = uniqueName(variable.toLowerCase());
    expect(await api.acquire(name, { holder: "a", leaseMs: 10_000 })).toMatchObject({ leader: true });
    expect((await new DynamoDbStore({ client, table: env.DYNAMODB_TABLE }).get(name))?.record.holder).toBe("a");
  }
});
