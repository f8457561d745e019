/**
 * AzureBlobStore against azurite (started by test/servers/azurite.server.ts): both shared suites,
 * with the store's own client and with a caller's retrying ContainerClient, the object stores'
 * shared cases (test/support/object-store-suites.ts: the request count of a renewal, SDK retries
 * and faults through the proxy of test/support/object-store-proxy.ts, corrupt blobs, listing
 * order), then what only Azure has: blob layout, blob leases, credentials, options.
 */
import { BlobServiceClient, type ContainerClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AzureBlobStore, type AzureBlobStoreOptions } from "../src/backends/azure-blob/store.js";
import { isAmbiguous, LeaseConflictError, LeaseStoreError, LeaseValidationError } from "../src/errors.js";
import { describeBoundContract } from "../src/testkit/bound-contract.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeShardedContract } from "../src/testkit/sharded-contract.js";
import { describeStoreContract, makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { AZURITE_ACCOUNT, AZURITE_KEY, azuriteConnectionString } from "./servers/azurite.server.js";
import { describeObjectStoreElectorFaults } from "./support/object-store-elector-faults.js";
import { ObjectStoreProxy } from "./support/object-store-proxy.js";
import { describeObjectStoreRecords, describeProxiedObjectStore } from "./support/object-store-suites.js";
import { rejection } from "./support/rejection.js";

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

/** Bytes that are not a record, where the store keeps `name` (a foreign tool's write). */
const plantUnreadable = async (name: string) => {
  await admin.getBlockBlobClient(`leases/${name}.json`).upload("{not json", 9);
};
describeStoreContract("azure blob (azurite)", {
  create: async () => ({ store: ownClient() }),
  conflictCarriesCurrent: true,
  plantUnreadable,
});
describeStoreContract("azure blob, caller's ContainerClient with SDK retries on", {
  create: async () => ({ store: retryingClient(endpoint) }),
  conflictCarriesCurrent: true,
  plantUnreadable,
});
describeElectorContract("azure blob (azurite)", async () => ({ store: ownClient() }));
describeBoundContract("azure blob (azurite)", async () => ({ store: ownClient() }));
describeShardedContract("azure blob (azurite)", async () => ({ store: ownClient() }));
describeObjectStoreElectorFaults("azure blob", {
  proxy: () => proxy,
  store: (options) => noClose(viaProxy(options)),
  truth: () => noClose(ownClient()),
});
describeProxiedObjectStore("AzureBlobStore", {
  proxy: () => proxy,
  viaProxy: (options) => viaProxy(options),
  retryingViaProxy: () => retryingClient(proxied),
  direct: () => ownClient(),
  remove: async (blobName) => {
    await admin.getBlockBlobClient(blobName).delete();
  },
  location: (name) => `/${containerName}/leases/${name}.json`,
  readBackFailures: ["500", "500", "500", "500"], // the SDK's 4 tries
  noun: "blob",
});
describeObjectStoreRecords("AzureBlobStore", "blobs", {
  store: () => ownClient(),
  raw: {
    write: async (blobName, body) => {
      await admin.getBlockBlobClient(blobName).upload(body, Buffer.byteLength(body));
    },
    read: async (blobName) => {
      const response = await admin.getBlockBlobClient(blobName).download(); // body and ETag of one version
      const chunks: Buffer[] = [];
      for await (const chunk of response.readableStreamBody ?? []) chunks.push(Buffer.from(chunk as Buffer));
      return { body: Buffer.concat(chunks).toString("utf8"), version: response.etag ?? "" };
    },
  },
});

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

describe("AzureBlobStore: SDK retries of conditional writes (a caller's retrying client)", () => {
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
