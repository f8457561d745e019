/**
 * S3Store against versitygw (started by test/servers/versitygw.server.ts): both shared suites,
 * with the store's own client and with a caller's retrying client, the object stores' shared
 * cases (test/support/object-store-suites.ts: the request count of a renewal, SDK retries and
 * faults through the proxy of test/support/object-store-proxy.ts, corrupt objects, listing order),
 * then what only S3 has: object layout, ETag ABA, 409 ConditionalRequestConflict, options.
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { S3Store, type S3StoreOptions } from "../src/backends/s3/store.js";
import { isAmbiguous, LeaseConflictError, LeaseStoreError, LeaseValidationError } from "../src/errors.js";
import { describeBoundContract } from "../src/testkit/bound-contract.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeShardedContract } from "../src/testkit/sharded-contract.js";
import { describeStoreContract, makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { S3_TEST_CREDENTIALS, S3_TEST_REGION, s3TestClient } from "./servers/versitygw.server.js";
import { describeObjectStoreElectorFaults } from "./support/object-store-elector-faults.js";
import { ObjectStoreProxy } from "./support/object-store-proxy.js";
import { describeObjectStoreRecords, describeProxiedObjectStore } from "./support/object-store-suites.js";
import { rejection } from "./support/rejection.js";

const endpoint = process.env.S3_ENDPOINT;
if (!endpoint) throw new Error("S3_ENDPOINT is not set: test/servers/versitygw.server.ts should have started");
const bucket = `leasehold-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const admin = s3TestClient(endpoint, 1);

let proxy: ObjectStoreProxy;
beforeAll(async () => {
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  proxy = await ObjectStoreProxy.start(endpoint, "s3");
});
afterAll(async () => {
  await proxy?.close();
  admin.destroy();
});

const ownClient = (options: Partial<S3StoreOptions> = {}) =>
  new S3Store({
    bucket,
    endpoint,
    region: S3_TEST_REGION,
    forcePathStyle: true,
    credentials: S3_TEST_CREDENTIALS,
    ...options,
  });
/** A caller's own S3Client with the SDK's standard retries (3 attempts on 5xx, timeouts, resets). */
const retryingClient = (url: string) => new S3Store({ bucket, client: s3TestClient(url, 3) });
const viaProxy = (options: Partial<S3StoreOptions> = {}) => ownClient({ endpoint: proxy.endpoint, ...options });

/** Bytes that are not a record, where the store keeps `name` (a foreign tool's write). */
const plantUnreadable = async (name: string) => {
  await admin.send(new PutObjectCommand({ Bucket: bucket, Key: `leases/${name}.json`, Body: "{not json" }));
};
describeStoreContract("s3 (versitygw)", {
  create: async () => {
    const store = ownClient();
    return { store, dispose: () => store.close() };
  },
  conflictCarriesCurrent: true,
  plantUnreadable,
});
describeStoreContract("s3, caller's S3Client with SDK retries on", {
  create: async () => ({ store: retryingClient(endpoint) }),
  conflictCarriesCurrent: true,
  plantUnreadable,
});
describeElectorContract("s3 (versitygw)", async () => {
  const store = ownClient();
  return { store, dispose: () => store.close() };
});
describeBoundContract("s3 (versitygw)", async () => {
  const store = ownClient();
  return { store, dispose: () => store.close() };
});
describeShardedContract("s3 (versitygw)", async () => {
  const store = ownClient();
  return { store, dispose: () => store.close() };
});
describeObjectStoreElectorFaults("s3", {
  proxy: () => proxy,
  store: (options) => viaProxy(options),
  truth: () => ownClient(),
  conditionalConflict: true,
});
describeProxiedObjectStore("S3Store", {
  proxy: () => proxy,
  viaProxy: (options) => viaProxy(options),
  retryingViaProxy: () => retryingClient(proxy.endpoint),
  direct: () => ownClient(),
  remove: async (key) => {
    await admin.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  },
  location: (name) => `s3://${bucket}/leases/${name}.json`,
  readBackFailures: ["500", "500", "500"], // the SDK's 3 attempts
  noun: "object",
});
describeObjectStoreRecords("S3Store", "objects", {
  store: () => ownClient(),
  raw: {
    write: async (key, body) => {
      await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    },
    read: async (key) => {
      const out = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return { body: (await out.Body?.transformToString()) ?? "", version: out.ETag ?? "" };
    },
  },
});

async function objectBody(key: string): Promise<string> {
  const out = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return (await out.Body?.transformToString()) ?? "";
}

describe("S3Store: object layout", () => {
  it("writes <prefix><name>.json as JSON with Cache-Control no-store; the ETag is the revision", async () => {
    const store = ownClient({ prefix: "custom/" });
    const name = uniqueName();
    const stored = await store.put(makeRecord(name), null);
    const head = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: `custom/${name}.json` }));
    expect(head.ContentType).toBe("application/json");
    expect(head.CacheControl).toBe("no-store");
    expect(head.ETag).toBe(stored.revision);
    expect(JSON.parse(await objectBody(`custom/${name}.json`))).toEqual(stored.record);
    expect(await ownClient().get(name)).toBeNull(); // the default prefix "leases/" is another namespace
    await store.close();
  });

  it("ETags are content hashes: the same bytes written again bring the old ETag back (why bodies must be unique)", async () => {
    const key = `raw/${uniqueName()}.json`;
    const put = (body: string, condition: { IfNoneMatch: string } | { IfMatch: string }) =>
      admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ...condition }));
    const a = await put('{"v":"A"}', { IfNoneMatch: "*" });
    const b = await put('{"v":"B"}', { IfMatch: a.ETag! });
    const again = await put('{"v":"A"}', { IfMatch: b.ETag! });
    expect(again.ETag).toBe(a.ETag);
    // So a stale If-Match taken at A succeeds: the hazard the store contract's ABA case rules out.
    await expect(put('{"v":"C"}', { IfMatch: a.ETag! })).resolves.toBeDefined();
  });
});

describe("S3Store: SDK retries of conditional writes (a caller's retrying client)", () => {
  it("409 ConditionalRequestConflict after a retry is ambiguous: the conflicting write may be the first attempt", async () => {
    const store = retryingClient(proxy.endpoint);
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    proxy.failNextPut("503-after-apply", "conditional-conflict");
    const next = makeRecord(name, { renewedAt: 2 });
    const error = await rejection(store.put(next, first.revision));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    expect((error as Error).message).toMatch(/ConditionalRequestConflict.*HTTP 409, 2 attempts/);
    expect((await ownClient().get(name))?.record.writeId).toBe(next.writeId);
  });
});

describe("S3Store: faults with its own client (one attempt per request)", () => {
  it("409 ConditionalRequestConflict on the only attempt did not apply: a non-ambiguous error, and a retry works", async () => {
    const store = viaProxy();
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const next = makeRecord(name, { renewedAt: 7 });
    proxy.failNextPut("conditional-conflict");
    const error = await rejection(store.put(next, first.revision));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(error).not.toBeInstanceOf(LeaseConflictError);
    expect(isAmbiguous(error)).toBe(false);
    expect((error as Error).message).toMatch(/ConditionalRequestConflict.*did not apply \(retry\)/);
    expect(await store.get(name)).toEqual(first);
    expect((await store.put(next, first.revision)).record).toEqual(next);
    await store.close();
  });

  it("a missing bucket is a definite, unambiguous failure on write and on read", async () => {
    const store = ownClient({ bucket: "no-such-bucket-here" });
    const write = await rejection(store.put(makeRecord(uniqueName()), null));
    expect(write).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(write)).toBe(false);
    expect((write as Error).message).toMatch(/NoSuchBucket.*no lease was written/);
    // Not "the lease does not exist": a read of a missing bucket is an error, never null.
    const read = await rejection(store.get(uniqueName()));
    expect(read).toBeInstanceOf(LeaseStoreError);
    await store.close();
  });

  it("credentials that cannot be loaded fail before sending: not ambiguous, naming the cause", async () => {
    const store = ownClient({
      credentials: async () => {
        throw Object.assign(new Error("no credentials in this test"), { name: "CredentialsProviderError" });
      },
    });
    const error = await rejection(store.put(makeRecord(uniqueName()), null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(false);
    expect((error as Error).message).toMatch(
      /CredentialsProviderError: no credentials in this test.*nothing was written/,
    );
    await store.close();
  });

  it("a refused connection before anything was sent is not ambiguous", async () => {
    const store = ownClient({ endpoint: "http://127.0.0.1:1" });
    const error = await rejection(store.put(makeRecord(uniqueName()), null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(false);
    await store.close();
  });
});

describe("S3Store: options", () => {
  it("rejects bad options and foreign revisions naming the field", async () => {
    expect(() => new S3Store({ bucket: "" })).toThrow(/bucket: expected an S3 bucket name/);
    expect(() => new S3Store({ bucket: "Bad_Bucket" })).toThrow(/bucket: expected an S3 bucket name/);
    expect(() => new S3Store({ bucket: "ok-bucket", prefix: "has space/" })).toThrow(/prefix: expected/);
    expect(() => new S3Store({ bucket: "ok-bucket", timeoutMs: 0 })).toThrow(/timeoutMs: expected a positive/);
    expect(() => new S3Store({ bucket: "ok-bucket", client: admin, region: "eu-west-1" })).toThrow(
      /region: only applies to the client the store creates/,
    );
    const store = ownClient();
    const error = await rejection(store.put(makeRecord(uniqueName()), "7"));
    expect(error).toBeInstanceOf(LeaseValidationError);
    expect((error as Error).message).toMatch(/expected: expected an S3 ETag this store issued/);
    await store.close();
  });

  it("uses the caller's own client as it is, and close() leaves it usable", async () => {
    const store = new S3Store({ bucket, client: admin, prefix: "mine/" });
    const name = uniqueName();
    const stored = await store.put(makeRecord(name), null);
    await store.close();
    expect(await store.get(name)).toEqual(stored);
    expect((await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: `mine/${name}.json` }))).ETag).toBe(
      stored.revision,
    );
  });
});
