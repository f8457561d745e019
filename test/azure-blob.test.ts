/**
 * AzureBlobStore against azurite (started by test/servers/azurite.server.ts): both shared suites,
 * with the store's own client and with a caller's retrying ContainerClient, then what only Azure
 * has: blob layout, the request count of a renewal, SDK retries and faults through a proxy
 * (test/support/object-store-proxy.ts), corrupt blobs, listing order, options.
 */
import { BlobServiceClient, type ContainerClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  isAmbiguous,
  LeaseConflictError,
  LeaseCorruptError,
  LeaseStoreError,
  LeaseValidationError,
} from "../src/errors.js";
import type { Stored } from "../src/lease.js";
import { AzureBlobStore, type AzureBlobStoreOptions } from "../src/stores/azure-blob.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeStoreContract, makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { AZURITE_ACCOUNT, AZURITE_KEY, azuriteConnectionString } from "./servers/azurite.server.js";
import { describeObjectStoreElectorFaults } from "./support/object-store-elector-faults.js";
import { ObjectStoreProxy } from "./support/object-store-proxy.js";

const endpoint = process.env.AZURE_BLOB_ENDPOINT;
if (!endpoint) throw new Error("AZURE_BLOB_ENDPOINT is not set: test/servers/azurite.server.ts should have started");
const containerName = `leasehold-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const credential = new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY);
const admin = new BlobServiceClient(endpoint, credential, { retryOptions: { maxTries: 1 } }).getContainerClient(
  containerName,
);

let proxy: ObjectStoreProxy;
let proxied: string;
beforeAll(async () => {
  await admin.create();
  proxy = await ObjectStoreProxy.start(new URL(endpoint).origin, "azure");
  proxied = `${proxy.endpoint}/${AZURITE_ACCOUNT}`;
});
afterAll(async () => {
  await proxy?.close();
});

const ownClient = (options: Partial<AzureBlobStoreOptions> = {}) =>
  new AzureBlobStore({
    container: containerName,
    connectionString: azuriteConnectionString(endpoint),
    ...options,
  } as AzureBlobStoreOptions);
/** A caller's own ContainerClient with the SDK's default retries (4 tries on 5xx, timeouts, resets). */
const retryingClient = (accountUrl: string): AzureBlobStore =>
  new AzureBlobStore({
    container: new BlobServiceClient(accountUrl, credential, {
      retryOptions: { retryDelayInMs: 10, maxRetryDelayInMs: 50 },
    }).getContainerClient(containerName),
  });
const viaProxy = (options: Partial<AzureBlobStoreOptions> = {}) =>
  ownClient({ connectionString: azuriteConnectionString(proxied), ...options });
const noClose = (store: AzureBlobStore) => Object.assign(store, { close: async () => undefined });

describeStoreContract("azure blob (azurite)", {
  create: async () => ({ store: ownClient() }),
  conflictCarriesCurrent: true,
});
describeStoreContract("azure blob, caller's ContainerClient with SDK retries on", {
  create: async () => ({ store: retryingClient(endpoint) }),
  conflictCarriesCurrent: true,
});
describeElectorContract("azure blob (azurite)", async () => ({ store: ownClient() }));
describeObjectStoreElectorFaults("azure blob", {
  proxy: () => proxy,
  store: (options) => noClose(viaProxy(options)),
  truth: () => noClose(ownClient()),
});

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

async function blobText(container: ContainerClient, blobName: string): Promise<string> {
  return (await container.getBlockBlobClient(blobName).downloadToBuffer()).toString("utf8");
}

describe("AzureBlobStore: blob layout", () => {
  it("writes <prefix><name>.json as JSON with Cache-Control no-store; the ETag is the revision", async () => {
    const store = ownClient({ prefix: "custom/" });
    const name = uniqueName();
    const stored = await store.put(makeRecord(name), null);
    const properties = await admin.getBlockBlobClient(`custom/${name}.json`).getProperties();
    expect(properties.contentType).toBe("application/json");
    expect(properties.cacheControl).toBe("no-store");
    expect(properties.etag).toBe(stored.revision);
    expect(JSON.parse(await blobText(admin, `custom/${name}.json`))).toEqual(stored.record);
    expect(await ownClient().get(name)).toBeNull(); // the default prefix "leases/" is another namespace
  });
});

describe("AzureBlobStore: a renewal is one PUT and no read, on the wire", () => {
  it("one store.put sends exactly one request; a lost CAS sends the PUT and one GET", async () => {
    const store = viaProxy();
    const name = uniqueName();
    let held = await store.put(makeRecord(name), null);
    proxy.resetCounts();
    for (let i = 0; i < 5; i++) held = await store.put(makeRecord(name, { renewedAt: i }), held.revision);
    expect(proxy.seen).toEqual(["put", "put", "put", "put", "put"]);
    proxy.resetCounts();
    await rejection(store.put(makeRecord(name), null)); // 409 BlobAlreadyExists
    expect(proxy.seen).toEqual(["put", "get"]);
    proxy.resetCounts();
    await rejection(store.put(makeRecord(name), `"0x1"`)); // 412 ConditionNotMet
    expect(proxy.seen).toEqual(["put", "get"]);
  });
});

describe("AzureBlobStore: SDK retries of conditional writes (a caller's retrying client)", () => {
  it("a create whose answer was lost, retried into 409, is a conflict carrying this very write", async () => {
    const store = retryingClient(proxied);
    const name = uniqueName();
    const record = makeRecord(name);
    proxy.failNextPut("reset-after-apply");
    proxy.resetCounts();
    const error = await rejection(store.put(record, null));
    expect(proxy.seen).toEqual(["put", "put", "get"]); // the SDK retried, was refused, the store read
    // The store reports; the write path decides "mine" by writeId (docs/design.md §4).
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current?.record).toEqual(record);
  });

  it("a renewal that applied but was answered 503, retried into 412, carries this write and its ETag", async () => {
    const store = retryingClient(proxied);
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

  it("after a retry, a refusal caused by another writer carries that writer's record", async () => {
    const store = retryingClient(proxied);
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

  it("a refusal whose blob cannot be read back is ambiguous with a client that may have retried", async () => {
    const store = retryingClient(proxied);
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const next = makeRecord(name, { renewedAt: 1 });
    proxy.failNextPut("503-after-apply");
    proxy.failNextGet("500", "500", "500", "500");
    const error = await rejection(store.put(next, first.revision));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    expect((error as Error).message).toMatch(/reading the blob back failed/);
    expect((await ownClient().get(name))?.record.writeId).toBe(next.writeId); // it had applied
  });

  it("any other write error is ambiguous with a client that may have retried", async () => {
    const store = new AzureBlobStore({
      container: new BlobServiceClient(endpoint, credential).getContainerClient("no-such-container"),
    });
    const error = await rejection(store.put(makeRecord(uniqueName()), null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
  });
});

describe("AzureBlobStore: faults with its own client (one try per request)", () => {
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
    expect((error as Error).message).toContain(`/${containerName}/leases/${name}.json`);
    expect(proxy.seen).toEqual(["put"]);
    expect((await store.get(name))?.record.writeId).toBe(applied ? next.writeId : first.record.writeId);
  });

  it("an answer slower than timeoutMs is ambiguous, and the write applies anyway", async () => {
    const store = viaProxy({ timeoutMs: 200 });
    const name = uniqueName();
    const record = makeRecord(name);
    proxy.failNextPut({ delayMs: 1000 });
    proxy.resetCounts();
    const error = await rejection(store.put(record, null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(true);
    expect(proxy.count("put")).toBe(1);
    expect((await ownClient().get(name))?.record).toEqual(record);
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
  });

  it("a refusal whose blob cannot be read back is a conflict with the current record unknown", async () => {
    const store = viaProxy();
    const name = uniqueName();
    await ownClient().put(makeRecord(name), null);
    proxy.failNextGet("503");
    const error = await rejection(store.put(makeRecord(name), null));
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current).toBeUndefined();
  });

  it("If-Match on a blob someone deleted is a conflict whose current record is null", async () => {
    const store = ownClient();
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    await admin.getBlockBlobClient(`leases/${name}.json`).delete();
    const error = await rejection(store.put(makeRecord(name, { renewedAt: 1 }), first.revision));
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current).toBeNull();
  });

  it("a missing container is a definite, unambiguous failure on write, and an error (not null) on read", async () => {
    const store = ownClient({ container: "no-such-container" });
    const write = await rejection(store.put(makeRecord(uniqueName()), null));
    expect(write).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(write)).toBe(false);
    expect((write as Error).message).toMatch(/ContainerNotFound.*nothing was written/);
    const read = await rejection(store.get(uniqueName()));
    expect(read).toBeInstanceOf(LeaseStoreError);
  });

  it("an Azure blob lease someone put on the blob (412 LeaseIdMissing) is a definite error, not a conflict", async () => {
    const store = ownClient();
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const blobLease = admin.getBlockBlobClient(`leases/${name}.json`).getBlobLeaseClient();
    await blobLease.acquireLease(15);
    try {
      const error = await rejection(store.put(makeRecord(name, { renewedAt: 1 }), first.revision));
      expect(error).toBeInstanceOf(LeaseStoreError);
      expect(error).not.toBeInstanceOf(LeaseConflictError);
      expect(isAmbiguous(error)).toBe(false);
      expect((error as Error).message).toMatch(/HTTP 412 LeaseIdMissing.*nothing was written/);
      expect(await store.get(name)).toEqual(first);
    } finally {
      await blobLease.releaseLease();
    }
  });

  it("a refused connection before anything was sent is not ambiguous", async () => {
    const store = ownClient({ connectionString: azuriteConnectionString(`http://127.0.0.1:1/${AZURITE_ACCOUNT}`) });
    const error = await rejection(store.put(makeRecord(uniqueName()), null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(false);
    expect((error as Error).message).toMatch(/ECONNREFUSED.*nothing was written/);
  });

  it("a wrong account key is refused (403) without ambiguity", async () => {
    const wrongKey = azuriteConnectionString(endpoint).replace(
      AZURITE_KEY,
      Buffer.from("x".repeat(64)).toString("base64"),
    );
    const store = ownClient({ connectionString: wrongKey });
    const error = await rejection(store.put(makeRecord(uniqueName()), null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(false);
    expect((error as Error).message).toMatch(/HTTP 403/);
  });
});

describe("AzureBlobStore: corrupt and foreign blobs", () => {
  it.each([
    ["not JSON", "{oops"],
    ["JSON of another shape", JSON.stringify({ hello: "world" })],
    ["a record naming another lease", JSON.stringify(makeRecord("someone-else"))],
  ])("%s is a LeaseCorruptError on read and is never overwritten", async (_label, content) => {
    const store = ownClient();
    const name = uniqueName();
    const blob = admin.getBlockBlobClient(`leases/${name}.json`);
    const { etag } = await blob.upload(content, Buffer.byteLength(content));
    const read = await rejection(store.get(name));
    expect(read).toBeInstanceOf(LeaseCorruptError);
    expect((read as LeaseCorruptError).lease).toBe(name);
    const write = await rejection(store.put(makeRecord(name), null));
    expect(write).toBeInstanceOf(LeaseCorruptError);
    expect((await blob.getProperties()).etag).toBe(etag);
    expect(await blobText(admin, `leases/${name}.json`)).toBe(content);
  });
});

describe("AzureBlobStore: list", () => {
  it("yields name order although blob names sort as <name>.json, skipping foreign blobs", async () => {
    const store = ownClient();
    const root = uniqueName("root");
    const names = ["a", "a-b", "a.a", "a.z", "a/c", "a0", "a-b-c", "a-b.x"].map((n) => `${root}/${n}`);
    for (const n of names) await store.put(makeRecord(n), null);
    for (const blobName of [`leases/${root}/readme.txt`, `leases/${root}/Upper.json`]) {
      await admin.getBlockBlobClient(blobName).upload("not a lease", 11);
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
  });

  it("pages through more blobs than one listing page returns, and each carries its current ETag", async () => {
    const store = ownClient();
    const root = uniqueName("many");
    const names = Array.from({ length: 230 }, (_, i) => `${root}/n${String(i).padStart(3, "0")}`);
    const written: Stored[] = [];
    for (let i = 0; i < names.length; i += 23) {
      written.push(...(await Promise.all(names.slice(i, i + 23).map((n) => store.put(makeRecord(n), null)))));
    }
    written[5] = await store.put(makeRecord(names[5]!, { renewedAt: 3 }), written[5]!.revision);
    const out: Stored[] = [];
    for await (const s of store.list(`${root}/`)) out.push(s);
    expect(out).toEqual(written);
    const tail: string[] = [];
    for await (const s of store.list(`${root}/`, { startAfter: names[198]!, limit: 5 })) tail.push(s.record.name);
    expect(tail).toEqual(names.slice(199, 204));
  });
});

describe("AzureBlobStore: options", () => {
  it("rejects bad options and foreign revisions naming the field", async () => {
    const cs = azuriteConnectionString(endpoint);
    expect(() => new AzureBlobStore({ container: "", connectionString: cs })).toThrow(
      /container: expected an Azure container name/,
    );
    expect(() => new AzureBlobStore({ container: "Upper", connectionString: cs })).toThrow(/container: expected/);
    expect(() => new AzureBlobStore({ container: "ok-container" })).toThrow(
      /connectionString: expected connectionString, or accountUrl with credential/,
    );
    expect(() => new AzureBlobStore({ container: "ok-container", accountUrl: endpoint })).toThrow(
      /credential: expected a StorageSharedKeyCredential or a TokenCredential/,
    );
    expect(() => new AzureBlobStore({ container: "ok-container", connectionString: cs, prefix: "a b" })).toThrow(
      /prefix: expected/,
    );
    expect(() => new AzureBlobStore({ container: admin, timeoutMs: 5 })).toThrow(
      /timeoutMs: only applies when container is a name/,
    );
    const error = await rejection(ownClient().put(makeRecord(uniqueName()), "7"));
    expect(error).toBeInstanceOf(LeaseValidationError);
    expect((error as Error).message).toMatch(/expected: expected an Azure ETag this store issued/);
  });

  it("works with accountUrl and a shared key credential, and with the caller's own ContainerClient", async () => {
    const byKey = new AzureBlobStore({ container: containerName, accountUrl: endpoint, credential });
    const name = uniqueName();
    const stored = await byKey.put(makeRecord(name), null);
    const mine = new AzureBlobStore({ container: admin });
    expect(await mine.get(name)).toEqual(stored);
  });
});
