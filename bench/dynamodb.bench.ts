/**
 * What DynamoDbStore and the Elector add on top of one conditional PutItem. Starts its own
 * dynalite (in memory, loopback) and measures, one call at a time, on one lease item:
 *   raw SDK PutItem with the store's ConditionExpression and item shape;
 *   DynamoDbStore.put (validation, encoding, error mapping);
 *   a full Elector renewal, from the store call being sent to the `renewed` event;
 *   DynamoDbStore.put that conflicts (dynalite omits ALL_OLD's item, so one GetItem follows).
 */
import { type AttributeValue, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDbStore } from "../src/backends/dynamodb/store.js";
import { LeaseConflictError } from "../src/errors.js";
import { Elector } from "../src/leader/elector.js";
import type { CallOptions, LeaseRecord, LeaseStore, Revision, Stored } from "../src/lease.js";
import { createLeaseTable, dynamoClient, startDynalite } from "../test/support/dynamo-server.js";
import { benchRecord } from "./support/common.js";
import { median, quantile, type Table, timeCalls } from "./table.js";

const N = 400;
const WARMUP = 100;

/** Records when each put is sent, so a renewal can be timed to the elector's `renewed` event. */
class SendTimes implements LeaseStore {
  lastSentAt = 0;
  constructor(private readonly inner: LeaseStore) {}
  get(name: string, options?: CallOptions): Promise<Stored | null> {
    return this.inner.get(name, options);
  }
  put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    this.lastSentAt = performance.now();
    return this.inner.put(next, expected, options);
  }
}

async function electorRenewals(store: LeaseStore, name: string, n: number): Promise<number[]> {
  const timed = new SendTimes(store);
  // renewMs 1: renewals back to back, so the run measures the write path, not the schedule.
  // callTimeoutMs defaults to renewMs, far too short here.
  const elector = new Elector({
    store: timed,
    name,
    identity: "bench",
    leaseMs: 5000,
    renewMs: 1,
    callTimeoutMs: 2000,
    jitter: 0,
  });
  const out: number[] = [];
  const warmup = WARMUP;
  let seen = 0;
  const done = new Promise<void>((resolve, reject) => {
    elector.on("error", (e) => reject(e.error));
    elector.on("deposed", (e) => reject(new Error(`bench elector deposed: ${e.reason}`)));
    elector.on("renewed", () => {
      const ms = performance.now() - timed.lastSentAt;
      if (seen++ >= warmup) out.push(ms);
      if (out.length >= n) resolve();
    });
  });
  elector.start();
  await done;
  await elector.stop({ release: false });
  return out;
}

export async function run(): Promise<Table[]> {
  const dynalite = await startDynalite();
  const client = dynamoClient(dynalite.endpoint);
  try {
    const table = await createLeaseTable(client);
    const store = new DynamoDbStore({ client, table });

    // Raw: the same item and condition the store sends, built once per call by hand.
    const rawName = "bench/raw";
    let rawRev = 0;
    const rawItem = (r: LeaseRecord, rev: number): Record<string, AttributeValue> => ({
      pk: { S: r.name },
      rev: { N: String(rev) },
      holder: { S: r.holder ?? "" },
      term: { N: String(r.term) },
      leaseMs: { N: String(r.leaseMs) },
      acquiredAt: { N: String(r.acquiredAt) },
      renewedAt: { N: String(r.renewedAt) },
      metadata: { M: { addr: { S: "10.0.0.7:8080" } } },
      writeId: { S: r.writeId },
    });
    const rawPut = async (i: number) => {
      const r = benchRecord(rawName, i);
      const expected = rawRev;
      await client.send(
        new PutItemCommand({
          TableName: table,
          Item: rawItem(r, expected + 1),
          ...(expected === 0
            ? { ConditionExpression: "attribute_not_exists(#pk)", ExpressionAttributeNames: { "#pk": "pk" } }
            : {
                ConditionExpression: "#rev = :rev",
                ExpressionAttributeNames: { "#rev": "rev" },
                ExpressionAttributeValues: { ":rev": { N: String(expected) } },
              }),
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      rawRev = expected + 1;
    };
    const storeName = "bench/store";
    let current: Stored | null = null;
    const storePut = async (i: number) => {
      current = await store.put(benchRecord(storeName, i), current?.revision ?? null);
    };
    // Interleaved call by call, after a shared warm-up, so JIT and dynalite warming favour neither.
    for (let i = 0; i < WARMUP; i++) {
      await rawPut(i);
      await storePut(i);
    }
    const raw: number[] = [];
    const viaStore: number[] = [];
    for (let i = 0; i < N; i++) {
      raw.push(...(await timeCalls(1, rawPut, 0)));
      viaStore.push(...(await timeCalls(1, storePut, 0)));
    }

    const renewals = await electorRenewals(store, "bench/elector", N);

    const conflictName = "bench/conflict";
    await store.put(benchRecord(conflictName, 0), null);
    const conflicts = await timeCalls(N, async (i) => {
      try {
        await store.put(benchRecord(conflictName, i), null);
      } catch (error) {
        if (!(error instanceof LeaseConflictError)) throw error;
      }
    });

    const base = median(raw);
    const row = (what: string, values: number[]) => [
      what,
      values.length,
      median(values),
      quantile(values, 0.99),
      median(values) / base,
    ];
    return [
      {
        title: "DynamoDB conditional write latency (dynalite in memory, loopback)",
        note: `One call at a time, one item per row, ${N} calls each after ${WARMUP} warm-up calls (raw and store interleaved call by call); ms. Ratio = median / raw PutItem median.`,
        columns: ["operation", "n", "median ms", "p99 ms", "ratio to raw"],
        rows: [
          row("raw SDK PutItem (#rev = :rev, ALL_OLD)", raw),
          row("DynamoDbStore.put", viaStore),
          row("Elector renewal (send to `renewed`)", renewals),
          row("DynamoDbStore.put conflict (+ GetItem fallback)", conflicts),
        ],
      },
    ];
  } finally {
    client.destroy();
    await dynalite.stop();
  }
}
