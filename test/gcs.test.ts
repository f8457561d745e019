/**
 * GcsStore against fake-gcs-server (started by test/servers/fake-gcs.server.ts): both shared
 * suites, three ways of configuring the client, the object stores' shared cases (corrupt objects,
 * listing order of `<name>.json` objects: test/support/object-store-suites.ts), then what only GCS
 * has: object layout, SDK retries of conditional uploads (through a fault proxy), ambiguity, and
 * the one-write-per-second limit.
 */
import { Storage } from "@google-cloud/storage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gcsBackend } from "../src/backends/gcs/backend.js";
import { GcsStore, type GcsStoreOptions } from "../src/backends/gcs/store.js";
import { isAmbiguous, LeaseConflictError, LeaseStoreError, LeaseValidationError } from "../src/errors.js";
import { Elector } from "../src/leader/elector.js";
import { describeBoundContract } from "../src/testkit/bound-contract.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeShardedContract } from "../src/testkit/sharded-contract.js";
import { casWrite, describeStoreContract, makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";
import { GcsFaultProxy } from "./support/gcs-proxy.js";
import { describeObjectStoreRecords } from "./support/object-store-suites.js";
import { rejection } from "./support/rejection.js";

const endpoint = process.env.GCS_ENDPOINT;
if (!endpoint) throw new Error("GCS_ENDPOINT is not set: test/servers/fake-gcs.server.ts should have started");
const projectId = "leasehold-test";
const bucketName = `leasehold-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const admin = new Storage({ apiEndpoint: endpoint, projectId });
const bucket = admin.bucket(bucketName);

let proxy: GcsFaultProxy;
beforeAll(async () => {
  await admin.createBucket(bucketName);
  proxy = await GcsFaultProxy.start(endpoint);
});
afterAll(async () => {
  await proxy?.close();
});

const ownClient = (options: Partial<GcsStoreOptions> = {}) =>
  new GcsStore({ bucket: bucketName, apiEndpoint: endpoint, projectId, ...options });
/** A caller's own Storage with the SDK's default retries (up to 3 on 408/429/5xx/resets). */
const retryingClient = (apiEndpoint: string) =>
  new GcsStore({ storage: new Storage({ apiEndpoint, projectId }), bucket: bucketName });

/** Bytes that are not a record, where the store keeps `name` (a foreign tool's write). */
const plantUnreadable = async (name: string) => {
  await bucket.file(`leases/${name}.json`).save("{not json", { resumable: false });
};
describeStoreContract("gcs", {
  create: async () => ({ store: ownClient() }),
  conflictCarriesCurrent: true,
  plantUnreadable,
});
describeStoreContract("gcs, caller's Storage with SDK retries on", {
  create: async () => ({ store: retryingClient(endpoint) }),
  conflictCarriesCurrent: true,
  plantUnreadable,
});
describeStoreContract("gcs, readCurrentOnConflict: false", {
  create: async () => ({ store: ownClient({ readCurrentOnConflict: false }) }),
  conflictCarriesCurrent: false,
  plantUnreadable,
});
describeElectorContract("gcs", async () => ({ store: ownClient() }), {
  timeScale: 4, // GCS refuses renewals faster than one a second (checkGcsElectorSettings)
});
describeBoundContract("gcs", async () => ({ store: ownClient() }), { timeScale: 4 });
describeShardedContract("gcs", async () => ({ store: ownClient() }), { timeScale: 4 });

describe("GcsStore: object layout", () => {
  it("writes <prefix><name>.json as JSON with Cache-Control no-store; the generation is the revision", async () => {
    const store = ownClient({ prefix: "custom/" });
    const name = uniqueName();
    const stored = await store.put(makeRecord(name), null);
    const [metadata] = await bucket.file(`custom/${name}.json`).getMetadata();
    expect(metadata.contentType).toBe("application/json");
    expect(metadata.cacheControl).toBe("no-store");
    expect(String(metadata.generation)).toBe(stored.revision);
    const [body] = await bucket.file(`custom/${name}.json`).download();
    expect(JSON.parse(body.toString())).toEqual(stored.record);
    expect(await ownClient().get(name)).toBeNull(); // default prefix "leases/" is a different namespace
  });

  it("a read returns the generation of the content it returned, even right after a replace", async () => {
    const store = ownClient();
    const name = uniqueName();
    let stored = await store.put(makeRecord(name), null);
    for (let i = 0; i < 5; i++) {
      stored = await store.put(makeRecord(name, { renewedAt: i }), stored.revision);
      expect(await store.get(name)).toEqual(stored);
    }
  });
});

describe("GcsStore: SDK retries of conditional uploads", () => {
  it("a create whose response was lost, retried by the SDK and answered 412, is reported with itself and counted applied", async () => {
    const store = retryingClient(proxy.endpoint);
    const name = uniqueName();
    const record = makeRecord(name);
    proxy.failNextUpload("reset-after-apply");
    const before = proxy.uploads;
    const error = await rejection(store.put(record, null));
    expect(proxy.uploads - before).toBe(2); // the SDK did retry, and the retry met 412
    expect(error).toBeInstanceOf(LeaseConflictError);
    const current = (error as LeaseConflictError).current;
    expect(current?.record).toEqual(record);
    expect(await store.get(name)).toEqual(current);
    const again = makeRecord(uniqueName());
    proxy.failNextUpload("reset-after-apply");
    const outcome = await casWrite(store, again, null);
    expect(outcome).toMatchObject({ kind: "applied", stored: { record: again } });
    expect(await store.get(again.name)).toEqual(outcome.kind === "applied" ? outcome.stored : undefined);
  });

  it("a renewal that applied but was answered 503, then retried into 412, keeps the lease", async () => {
    const store = retryingClient(proxy.endpoint);
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const renewal = makeRecord(name, { renewedAt: first.record.renewedAt + 5000 });
    proxy.failNextUpload("503-after-apply");
    const before = proxy.uploads;
    const outcome = await casWrite(store, renewal, first.revision);
    expect(proxy.uploads - before).toBe(2);
    expect(outcome.kind).toBe("applied");
    const stored = outcome.kind === "applied" ? outcome.stored : first;
    expect(stored.record).toEqual(renewal);
    expect(stored.revision).not.toBe(first.revision);
    expect(await store.get(name)).toEqual(stored);
  });

  it("after a retry, a 412 caused by another writer is still a conflict carrying that writer's record", async () => {
    const store = retryingClient(proxy.endpoint);
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const theirs = await ownClient().put(makeRecord(name, { holder: "bob", term: 2 }), first.revision);
    proxy.failNextUpload("503");
    const before = proxy.uploads;
    const error = await rejection(store.put(makeRecord(name, { renewedAt: 9 }), first.revision));
    expect(proxy.uploads - before).toBe(2);
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current).toEqual(theirs);
  });
});

describe("GcsStore: ambiguous outcomes with its own client (no SDK retries)", () => {
  const viaProxy = () => ownClient({ apiEndpoint: proxy.endpoint });

  it.each([
    ["503", false],
    ["429", false],
    ["503-after-apply", true],
    ["reset-after-apply", true],
  ] as const)("an upload answered %s is an ambiguous LeaseStoreError, sent once", async (fault, applied) => {
    const store = viaProxy();
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const next = makeRecord(name, { renewedAt: 42 });
    proxy.failNextUpload(fault);
    const before = proxy.uploads;
    const error = await rejection(store.put(next, first.revision));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    expect((error as Error).message).toContain(`gs://${bucketName}/leases/${name}.json`);
    expect(proxy.uploads - before).toBe(1);
    // Why it must be ambiguous: in half of these cases the write did apply.
    expect((await store.get(name))?.record.writeId).toBe(applied ? next.writeId : first.record.writeId);
  });

  it("an upload abandoned through its AbortSignal is ambiguous; one aborted before sending is not", async () => {
    const store = viaProxy();
    const name = uniqueName();
    proxy.failNextUpload("hang");
    const controller = new AbortController();
    const pending = rejection(store.put(makeRecord(name), null, { signal: controller.signal }));
    await proxy.nextUpload();
    controller.abort();
    const error = await pending;
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    const early = await rejection(store.put(makeRecord(name), null, { signal: AbortSignal.abort() }));
    expect(early).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(early)).toBe(false);
  });

  it("a read whose connection is cut before any answer is sent once more (reads change nothing); a 503 is not", async () => {
    const store = viaProxy();
    const name = uniqueName();
    const written = await store.put(makeRecord(name), null);
    let before = proxy.downloads;
    proxy.failNextDownload("reset");
    expect(await store.get(name)).toEqual(written);
    expect(proxy.downloads - before).toBe(2);
    before = proxy.downloads;
    proxy.failNextDownload("reset", "reset");
    const twice = await rejection(store.get(name));
    expect(twice).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(twice)).toBe(false);
    expect(proxy.downloads - before).toBe(2);
    before = proxy.downloads;
    proxy.failNextDownload("503");
    const unavailable = await rejection(store.get(name));
    expect(unavailable).toBeInstanceOf(LeaseStoreError);
    expect(proxy.downloads - before).toBe(1);
  });

  it("a 4xx other than 408/429 (missing bucket) is a definite, unambiguous failure", async () => {
    const store = new GcsStore({ bucket: "no-such-bucket-here", apiEndpoint: endpoint, projectId });
    const error = await rejection(store.put(makeRecord(uniqueName()), null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(false);
  });
});

describeObjectStoreRecords("GcsStore", "objects", {
  store: () => ownClient(),
  raw: {
    write: async (key, body) => {
      await bucket.file(key).save(body, { resumable: false });
    },
    read: async (key) => {
      const [metadata] = await bucket.file(key).getMetadata();
      const generation = String(metadata.generation);
      // The body of exactly that generation, so the two belong together.
      const [body] = await bucket.file(key, { generation }).download();
      return { body: body.toString("utf8"), version: generation };
    },
  },
});

describe("GcsStore: options and limits", () => {
  it("declares one write per second as its limit, and an Elector renewing faster is refused naming renewMs and the limit", () => {
    const store = ownClient();
    expect(store.limits).toEqual(gcsBackend.limits);
    expect(gcsBackend.limits?.minWriteIntervalMs).toBe(1000);
    expect(() => new Elector({ store, name: "gcs/fast", leaseMs: 2000, renewMs: 500 })).toThrow(
      /invalid elector options: renewMs: expected at least 1000 ms, got 500: GCS allows about one write per second to one object/,
    );
    // Behind a wrapper too: the limit is forwarded with the other capabilities.
    expect(
      () => new Elector({ store: new StoreWrapper(store), name: "gcs/fast", leaseMs: 2000, renewMs: 500 }),
    ).toThrow(/renewMs: expected at least 1000 ms/);
    expect(new Elector({ store, name: "gcs/ok", leaseMs: 15_000 }).renewMs).toBe(5000);
  });

  it("rejects bad options and foreign revisions naming the field", async () => {
    expect(() => new GcsStore({ bucket: "" })).toThrow(/bucket: expected a GCS bucket name/);
    expect(() => new GcsStore({ bucket: "ok-bucket", prefix: "has space/" })).toThrow(/prefix: expected/);
    expect(() => new GcsStore({ bucket: "ok-bucket", timeoutMs: 0 })).toThrow(/timeoutMs: expected a positive/);
    const error = await rejection(ownClient().put(makeRecord(uniqueName()), "rev-7"));
    expect(error).toBeInstanceOf(LeaseValidationError);
    expect((error as Error).message).toMatch(/expected: expected a GCS object generation/);
  });

  it("accepts a Bucket of the caller's own Storage", async () => {
    const store = new GcsStore({ bucket: admin.bucket(bucketName), prefix: "mine/" });
    const name = uniqueName();
    const stored = await store.put(makeRecord(name), null);
    expect(await store.get(name)).toEqual(stored);
    expect((await bucket.file(`mine/${name}.json`).exists())[0]).toBe(true);
  });
});
