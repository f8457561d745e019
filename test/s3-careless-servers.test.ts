/**
 * S3-compatible servers that break the conditional-write contract are refused, loudly, before any
 * lease is written (src/backends/object-store/conditional-probe.ts): one that ignores If-None-Match / If-Match,
 * one that answers 501 to them. An Elector on such an `s3://...?endpoint=` store stops with that
 * error without retrying: on a manual clock that never moves, so within any call timeout. A 403 on
 * a read of a missing key names the permission that is missing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../src/clock.js";
import { isAmbiguous, isStoreContractError, LeaseStoreError } from "../src/errors.js";
import { runAsLeader } from "../src/leader/run-as-leader.js";
import { openStore } from "../src/open-store.js";
import { makeRecord } from "../src/testkit/store-contract.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";
import { type Carelessness, type CarelessS3, startCarelessS3 } from "./support/careless-s3.js";
import { rejection } from "./support/rejection.js";

const servers: CarelessS3[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function careless(mode: Carelessness) {
  const server = await startCarelessS3(mode);
  servers.push(server);
  const url = `s3://leases/app/?region=us-east-1&pathStyle=true&endpoint=${encodeURIComponent(server.endpoint)}`;
  const env = { AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test" };
  Object.assign(process.env, env); // the AWS SDK reads its credentials from the process environment
  return { server, store: await openStore(url, { env }) };
}

/** runAsLeader on a clock that never moves: whatever it does, it does without waiting for a timer. */
async function campaign(mode: Carelessness) {
  const { server, store } = await careless(mode);
  const tracked = new TrackedStore(store);
  const clock = new ManualClock({ idle: () => tracked.settle() });
  let ran = false;
  const outcome = await runAsLeader(
    { store: tracked, name: "jobs/report", leaseMs: 15_000, callTimeoutMs: 5000, clock },
    () => {
      ran = true;
    },
  ).then(
    () => "resolved",
    (error: unknown) => error,
  );
  await store.close?.();
  return { server, outcome, ran, puts: tracked.counts.put };
}

describe("S3-compatible servers that break the conditional-write contract", () => {
  it("one that ignores If-None-Match: the Elector stops with an error naming the endpoint and what failed, and no lease is written", async () => {
    const { server, outcome, ran, puts } = await campaign("ignores-conditions");
    expect(isStoreContractError(outcome)).toBe(true);
    expect((outcome as Error).message).toContain(server.endpoint);
    expect((outcome as Error).message).toMatch(
      /does not keep the conditional-write contract leasehold relies on: it accepted a PUT with If-None-Match: \* on an object that exists/,
    );
    expect(ran).toBe(false);
    // One acquisition attempt, never retried; the lease's object was never written.
    expect(puts).toBe(1);
    expect([...server.objects.keys()]).toEqual(["leases/app/.leasehold-probe.json"]);
  });

  it("one that answers 501 to a conditional PUT: a definite error, never retried", async () => {
    const { server, outcome, puts } = await campaign("not-implemented");
    expect(isStoreContractError(outcome)).toBe(true);
    expect(isAmbiguous(outcome)).toBe(false);
    expect((outcome as Error).message).toMatch(/501 Not Implemented: it does not support conditional writes/);
    expect((outcome as Error).message).toContain(server.endpoint);
    expect(puts).toBe(1);
    expect(server.requests.filter((r) => r.method === "PUT")).toHaveLength(1);
    expect(server.objects.size).toBe(0);
  });

  it("the refusal is remembered: a second store on the same endpoint is refused without asking again", async () => {
    const { server, store } = await careless("ignores-conditions");
    await expect(store.put(makeRecord("jobs/a"), null)).rejects.toThrow(/second create/);
    const sent = server.requests.length;
    const again = await openStore(
      `s3://leases/app/?region=us-east-1&pathStyle=true&endpoint=${encodeURIComponent(server.endpoint)}`,
    );
    await expect(again.put(makeRecord("jobs/b"), null)).rejects.toThrow(/second create/);
    expect(server.requests.length).toBe(sent);
  });

  it("a 403 on reading a missing key says the role needs s3:ListBucket", async () => {
    const { store } = await careless("hides-missing");
    const error = await rejection(store.get("jobs/report"));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(false);
    expect((error as Error).message).toMatch(/AccessDenied.*HTTP 403.*grant s3:ListBucket on the bucket/);
  });
});
