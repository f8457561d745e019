/**
 * S3Store against versitygw (started by test/servers/versitygw.server.ts): both shared suites,
 * with the store's own client and with a caller's retrying client, then what only S3 has: object
 * layout, ETag ABA, the request count of a renewal, SDK retries and faults through a proxy
 * (test/support/object-store-proxy.ts), corrupt objects, listing order, options.
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  isAmbiguous,
  LeaseConflictError,
  LeaseCorruptError,
  LeaseStoreError,
  LeaseValidationError,
} from "../src/errors.js";
import type { Stored } from "../src/lease.js";
import { S3Store, type S3StoreOptions } from "../src/stores/s3.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeStoreContract, makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { S3_TEST_CREDENTIALS, S3_TEST_REGION } from "./servers/versitygw.server.js";
import { describeObjectStoreElectorFaults } from "./support/object-store-elector-faults.js";
import { ObjectStoreProxy } from "./support/object-store-proxy.js";

const endpoint = process.env.S3_ENDPOINT;
if (!endpoint) throw new Error("S3_ENDPOINT is not set: test/servers/versitygw.server.ts should have started");
const bucket = `leasehold-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const clientConfig = (url: string, maxAttempts: number) => ({
  endpoint: url,
  region: S3_TEST_REGION,
  forcePathStyle: true,
  credentials: S3_TEST_CREDENTIALS,
  maxAttempts,
});
const admin = new S3Client(clientConfig(endpoint, 1));

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
const retryingClient = (url: string) => new S3Store({ bucket, client: new S3Client(clientConfig(url, 3)) });
const viaProxy = (options: Partial<S3StoreOptions> = {}) => ownClient({ endpoint: proxy.endpoint, ...options });

describeStoreContract("s3 (versitygw)", {
  create: async () => {
    const store = ownClient();
    return { store, dispose: () => store.close() };
  },
  conflictCarriesCurrent: true,
});
describeStoreContract("s3, caller's S3Client with SDK retries on", {
  create: async () => ({ store: retryingClient(endpoint) }),
  conflictCarriesCurrent: true,
});
describeElectorContract("s3 (versitygw)", async () => {
  const store = ownClient();
  return { store, dispose: () => store.close() };
});
describeObjectStoreElectorFaults("s3", {
  proxy: () => proxy,
  store: (options) => viaProxy(options),
  truth: () => ownClient(),
  conditionalConflict: true,
});

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

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

describe("S3Store: a renewal is one PUT and no read, on the wire", () => {
  it("one store.put sends exactly one request; a lost CAS sends the PUT and one GET", async () => {
    const store = viaProxy();
    const name = uniqueName();
    let held = await store.put(makeRecord(name), null);
    proxy.resetCounts();
    for (let i = 0; i < 5; i++) held = await store.put(makeRecord(name, { renewedAt: i }), held.revision);
    expect(proxy.seen).toEqual(["put", "put", "put", "put", "put"]);
    proxy.resetCounts();
    await rejection(store.put(makeRecord(name), null));
    expect(proxy.seen).toEqual(["put", "get"]);
    await store.close();
  });
});

describe("S3Store: SDK retries of conditional writes (a caller's retrying client)", () => {
  it("a create whose answer was lost, retried into 412, is a conflict carrying this very write", async () => {
    const store = retryingClient(proxy.endpoint);
    const name = uniqueName();
    const record = makeRecord(name);
    proxy.failNextPut("reset-after-apply");
    proxy.resetCounts();
    const error = await rejection(store.put(record, null));
    expect(proxy.seen).toEqual(["put", "put", "get"]); // the SDK retried, met 412, the store read
    // The store reports; the write path decides "mine" by writeId (docs/design.md §4).
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current?.record).toEqual(record);
  });

  it("a renewal that applied but was answered 503, retried into 412, carries this write and its ETag", async () => {
    const store = retryingClient(proxy.endpoint);
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const renewal = makeRecord(name, { renewedAt: first.record.renewedAt + 5000 });
    proxy.failNextPut("503-after-apply");
    const error = await rejection(store.put(renewal, first.revision));
    expect(error).toBeInstanceOf(LeaseConflictError);
    const current = (error as LeaseConflictError).current;
    expect(current?.record).toEqual(renewal);
    expect(current?.revision).not.toBe(first.revision);
    expect(await ownClient().get(name)).toEqual(current);
  });

  it("after a retry, a 412 caused by another writer carries that writer's record", async () => {
    const store = retryingClient(proxy.endpoint);
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const theirs = await ownClient().put(makeRecord(name, { holder: "bob", term: 2 }), first.revision);
    proxy.failNextPut("503");
    proxy.resetCounts();
    const error = await rejection(store.put(makeRecord(name, { renewedAt: 9 }), first.revision));
    expect(proxy.count("put")).toBe(2);
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current).toEqual(theirs);
  });

  it("after a retry, a 412 whose object cannot be read back is ambiguous (the first attempt may have applied)", async () => {
    const store = retryingClient(proxy.endpoint);
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const next = makeRecord(name, { renewedAt: 1 });
    proxy.failNextPut("503-after-apply");
    proxy.failNextGet("500", "500", "500");
    const error = await rejection(store.put(next, first.revision));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    expect((error as Error).message).toMatch(/after 2 attempts, and reading the object back failed/);
    expect((await ownClient().get(name))?.record.writeId).toBe(next.writeId); // it had applied
  });

  it("409 ConditionalRequestConflict after a retry is ambiguous: the conflicting write may be the first attempt", async () => {
    const store = retryingClient(proxy.endpoint);
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    proxy.failNextPut("503-after-apply", "conditional-conflict");
    const next = makeRecord(name, { renewedAt: 2 });
    const error = await rejection(store.put(next, first.revision));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    expect((error as Error).message).toMatch(/HTTP 409, 2 attempts.*ConditionalRequestConflict/);
    expect((await ownClient().get(name))?.record.writeId).toBe(next.writeId);
  });
});

describe("S3Store: faults with its own client (one attempt per request)", () => {
  it.each([
    ["500", false],
    ["503", false],
    ["500-after-apply", true],
    ["503-after-apply", true],
    ["reset-after-apply", true],
  ] as const)("a PUT answered %s is an ambiguous LeaseStoreError, sent once", async (fault, applied) => {
    const store = viaProxy();
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const next = makeRecord(name, { renewedAt: 42 });
    proxy.failNextPut(fault);
    proxy.resetCounts();
    const error = await rejection(store.put(next, first.revision));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    expect((error as Error).message).toContain(`s3://${bucket}/leases/${name}.json`);
    expect(proxy.seen).toEqual(["put"]);
    // Why it must be ambiguous: in some of these cases the write did apply.
    expect((await store.get(name))?.record.writeId).toBe(applied ? next.writeId : first.record.writeId);
    await store.close();
  });

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

  it("an answer slower than timeoutMs is ambiguous, and the write applies anyway", async () => {
    const store = viaProxy({ timeoutMs: 200 });
    const name = uniqueName();
    const record = makeRecord(name);
    proxy.failNextPut({ delayMs: 1000 });
    const error = await rejection(store.put(record, null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    expect((await ownClient().get(name))?.record).toEqual(record);
    await store.close();
  });

  it("a PUT abandoned through its AbortSignal is ambiguous; one aborted before sending is not", async () => {
    const store = viaProxy();
    const name = uniqueName();
    proxy.failNextPut("hang");
    const controller = new AbortController();
    const sent = proxy.nextPut();
    const pending = rejection(store.put(makeRecord(name), null, { signal: controller.signal }));
    await sent;
    controller.abort();
    const error = await pending;
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    const early = await rejection(store.put(makeRecord(name), null, { signal: AbortSignal.abort() }));
    expect(early).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(early)).toBe(false);
    await store.close();
  });

  it("a read whose connection is reset before any answer is sent once more (reads change nothing)", async () => {
    const store = viaProxy();
    const name = uniqueName();
    const written = await ownClient().put(makeRecord(name), null);
    proxy.resetCounts();
    proxy.failNextGet("reset");
    expect(await store.get(name)).toEqual(written);
    expect(proxy.count("get")).toBe(2);
    proxy.failNextGet("reset", "reset");
    const error = await rejection(store.get(name));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(false);
    await store.close();
  });

  it("a 412 whose object cannot be read back is a conflict with the current record unknown", async () => {
    const store = viaProxy();
    const name = uniqueName();
    await ownClient().put(makeRecord(name), null);
    proxy.failNextGet("503");
    const error = await rejection(store.put(makeRecord(name), null));
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current).toBeUndefined();
    await store.close();
  });

  it("If-Match on an object someone deleted is a conflict whose current record is null", async () => {
    const store = ownClient();
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    await admin.send(new DeleteObjectCommand({ Bucket: bucket, Key: `leases/${name}.json` }));
    const error = await rejection(store.put(makeRecord(name, { renewedAt: 1 }), first.revision));
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current).toBeNull();
    expect(await store.get(name)).toBeNull();
    await store.close();
  });

  it("a missing bucket is a definite, unambiguous failure on write and on read", async () => {
    const store = ownClient({ bucket: "no-such-bucket-here" });
    const write = await rejection(store.put(makeRecord(uniqueName()), null));
    expect(write).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(write)).toBe(false);
    expect((write as Error).message).toMatch(/NoSuchBucket.*nothing was written/);
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

describe("S3Store: corrupt and foreign objects", () => {
  it.each([
    ["not JSON", "{oops"],
    ["JSON of another shape", JSON.stringify({ hello: "world" })],
    ["a record naming another lease", JSON.stringify(makeRecord("someone-else"))],
  ])("%s is a LeaseCorruptError on read and is never overwritten", async (_label, content) => {
    const store = ownClient();
    const name = uniqueName();
    const key = `leases/${name}.json`;
    const { ETag } = await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: content }));
    const read = await rejection(store.get(name));
    expect(read).toBeInstanceOf(LeaseCorruptError);
    expect((read as LeaseCorruptError).lease).toBe(name);
    const write = await rejection(store.put(makeRecord(name), null));
    expect(write).toBeInstanceOf(LeaseCorruptError);
    expect((await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ETag).toBe(ETag);
    expect(await objectBody(key)).toBe(content);
    await store.close();
  });
});

describe("S3Store: list", () => {
  it("yields name order although keys sort as <name>.json, skipping foreign objects", async () => {
    const store = ownClient();
    const root = uniqueName("root");
    const names = ["a", "a-b", "a.a", "a.z", "a/c", "a0", "a-b-c", "a-b.x"].map((n) => `${root}/${n}`);
    for (const n of names) await store.put(makeRecord(n), null);
    for (const key of [`leases/${root}/readme.txt`, `leases/${root}/Upper.json`]) {
      await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: "not a lease" }));
    }
    const list = async (prefix: string, options?: { startAfter?: string; limit?: number }) => {
      const out: string[] = [];
      for await (const s of store.list(prefix, options)) out.push(s.record.name);
      return out;
    };
    const sorted = [...names].sort();
    expect(await list(`${root}/`)).toEqual(sorted);
    expect(await list(`${root}/`, { startAfter: `${root}/a` })).toEqual(sorted.slice(1));
    expect(await list(`${root}/`, { startAfter: `${root}/a-b`, limit: 3 })).toEqual(sorted.slice(2, 5));
    expect(await list(`${root}/a-`)).toEqual(sorted.filter((n) => n.startsWith(`${root}/a-`)));
    expect(await list(`${root}/`, { limit: 0 })).toEqual([]);
    await store.close();
  });

  it("pages through more objects than one listing page returns, and each carries its current ETag", async () => {
    const store = ownClient();
    const root = uniqueName("many");
    const names = Array.from({ length: 230 }, (_, i) => `${root}/n${String(i).padStart(3, "0")}`);
    const written: Stored[] = [];
    for (let i = 0; i < names.length; i += 23) {
      written.push(...(await Promise.all(names.slice(i, i + 23).map((n) => store.put(makeRecord(n), null)))));
    }
    const renewed = await store.put(makeRecord(names[5]!, { renewedAt: 3 }), written[5]!.revision);
    written[5] = renewed;
    const out: Stored[] = [];
    for await (const s of store.list(`${root}/`)) out.push(s);
    expect(out).toEqual(written);
    const tail: string[] = [];
    for await (const s of store.list(`${root}/`, { startAfter: names[198]!, limit: 5 })) tail.push(s.record.name);
    expect(tail).toEqual(names.slice(199, 204));
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
