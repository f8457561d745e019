/**
 * Names are paths that cannot move (docs/design.md §1): the reproductions of issue #20 item 1,
 * each through the API (in process) on SQLite, on Azure Blob over azurite and on S3 over
 * versitygw, where the Azure SDK and the POSIX-backed gateway resolve "." and ".." segments. With
 * a token scoped to `a/`, every request naming a lease through a dot segment answers 400 and
 * changes nothing: nothing read or planted in another container or outside the store's prefix,
 * no name squatted, no listing or group broken. A store configured with a prefix that could move
 * refuses to build a key at all.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import { afterAll, describe, expect, it } from "vitest";
import type { TokenScope } from "../src/api/auth.js";
import { AzureBlobStore } from "../src/backends/azure-blob/store.js";
import { S3Store } from "../src/backends/s3/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { LeaseValidationError } from "../src/errors.js";
import type { LeaseStore, Stored } from "../src/lease.js";
import { readable } from "../src/listing.js";
import { makeRecord } from "../src/testkit/store-contract.js";
import { AZURITE_ACCOUNT, AZURITE_KEY, azuriteConnectionString } from "./servers/azurite.server.js";
import { S3_TEST_CREDENTIALS, S3_TEST_REGION, s3TestClient } from "./servers/versitygw.server.js";
import { inProcessApi } from "./support/in-process-api.js";

const azureEndpoint = process.env.AZURE_BLOB_ENDPOINT;
const s3Endpoint = process.env.S3_ENDPOINT;
if (!azureEndpoint || !s3Endpoint) throw new Error("azurite and versitygw should have been started (test/servers/)");

const suffix = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
const A = "a-scope-token-0123456789";
const BILLING = "billing-token-0123456789";
const tokens: TokenScope[] = [
  { name: "a", token: A, prefixes: ["a/"], verbs: ["read", "write", "cas"] },
  { name: "billing", token: BILLING, prefixes: ["billing/"], verbs: ["read", "write", "cas"] },
];
const SECRET = { dbPassword: "hunter2-do-not-leak", apiKey: "sk-live-0000" };

/** A backend, and a look at what lies outside the store's keys: another container, or outside its prefix. */
interface Backend {
  store: LeaseStore;
  /** The foreign object's text, or null when absent: `appconfig/<name>` beside (or above) the store. */
  foreign(name: string): Promise<string | null>;
  close(): Promise<void>;
}

const credential = new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY);

async function azure(): Promise<Backend> {
  const service = new BlobServiceClient(azureEndpoint!, credential, { retryOptions: { maxTries: 1 } });
  const leases = `leases-${suffix}`;
  // "appconfig" is another container of the same storage account, as in the issue.
  const appconfig = service.getContainerClient("appconfig");
  await appconfig.createIfNotExists();
  await service.getContainerClient(leases).create();
  const settings = JSON.stringify(SECRET);
  await appconfig.getBlockBlobClient("settings.json").upload(settings, settings.length);
  return {
    store: new AzureBlobStore({ container: leases, connectionString: azuriteConnectionString(azureEndpoint!) }),
    foreign: async (name) => {
      const blob = appconfig.getBlockBlobClient(`${name}.json`);
      if (!(await blob.exists())) return null;
      return (await blob.downloadToBuffer()).toString();
    },
    close: async () => undefined,
  };
}

async function s3(): Promise<Backend> {
  const bucket = `traversal-${suffix}`;
  const admin = s3TestClient(s3Endpoint!, 1);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  // Outside the store's prefix ("leases/"), in the same bucket.
  await admin.send(
    new PutObjectCommand({ Bucket: bucket, Key: "appconfig/settings.json", Body: JSON.stringify(SECRET) }),
  );
  const store = new S3Store({
    bucket,
    endpoint: s3Endpoint!,
    region: S3_TEST_REGION,
    forcePathStyle: true,
    credentials: S3_TEST_CREDENTIALS,
  });
  return {
    store,
    foreign: async (name) => {
      try {
        const got = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: `appconfig/${name}.json` }));
        return (await got.Body?.transformToString()) ?? "";
      } catch (error) {
        if ((error as { name?: string }).name === "NoSuchKey") return null;
        throw error;
      }
    },
    close: async () => {
      await store.close();
      admin.destroy();
    },
  };
}

async function sqlite(): Promise<Backend> {
  const store = new SqliteStore({ path: ":memory:" });
  return { store, foreign: async () => null, close: () => store.close() };
}

async function everything(store: LeaseStore): Promise<Stored[]> {
  const out: Stored[] = [];
  for await (const s of readable(store.list!(""))) out.push(s);
  return out;
}

describe.each([
  { backend: "sqlite", open: sqlite },
  { backend: "azure blob (azurite)", open: azure },
  { backend: "s3 (versitygw)", open: s3 },
])("a token scoped to a/ on $backend", ({ open }) => {
  let backend: Backend;
  afterAll(() => backend?.close());

  const call = async (
    api: ReturnType<typeof inProcessApi>,
    method: string,
    path: string,
    token: string,
    body?: unknown,
  ) => {
    const res = await api.fetch(`${api.url}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, type: res.headers.get("content-type"), text };
  };

  it("cannot read, plant, squat or break anything through a dot segment: 400 each, and every record as it was", async () => {
    backend = await open();
    const api = inProcessApi({ store: backend.store, auth: { tokens } });
    const instance = crypto.randomUUID();
    // billing's own lease, before the attempts, so a broken listing would show.
    expect(
      (
        await call(api, "POST", "/v1/leases/billing%2Fdaily/acquire", BILLING, {
          holder: "billing",
          instance,
          leaseMs: 60_000,
        })
      ).status,
    ).toBe(200);
    const before = await everything(backend.store);

    const attempts: Array<[string, string, unknown?]> = [
      // Reading a blob of another container (azurite answered 500 naming its fields).
      ["GET", "/v1/leases/a%2F..%2F..%2F..%2Fappconfig%2Fsettings"],
      ["GET", "/v1/leases/a%2F..%2F..%2Fappconfig%2Fsettings"],
      ["GET", "/v1/leases/a%2F%2E%2E%2F%2E%2E%2Fappconfig%2Fsettings/watch"],
      // Planting a blob with chosen metadata there.
      [
        "POST",
        "/v1/leases/a%2F..%2F..%2F..%2Fappconfig%2Fplanted/acquire",
        { holder: "mallory", instance, leaseMs: 60_000, metadata: { evil: "1" } },
      ],
      [
        "POST",
        "/v1/leases/a%2F..%2F..%2Fappconfig%2Fplanted/acquire",
        { holder: "mallory", instance, leaseMs: 60_000 },
      ],
      // Squatting billing's name before its owner takes it.
      ["POST", "/v1/leases/a%2F..%2Fbilling%2Fjob/acquire", { holder: "mallory", instance, leaseMs: 86_400_000 }],
      ["POST", "/v1/leases/a%2F.%2F..%2Fbilling%2Fjob/acquire", { holder: "mallory", instance, leaseMs: 60_000 }],
      ["POST", "/v1/leases/a%2F%2Fbilling%2Fjob/acquire", { holder: "mallory", instance, leaseMs: 60_000 }],
      // And under a group: every member's heartbeat of billing's group.
      ["POST", "/v1/groups/a%2F..%2Fbilling%2Fgrp/members/m1/heartbeat", { instance, leaseMs: 60_000, buckets: 4 }],
      ["GET", "/v1/leases?prefix=a%2F..%2Fbilling%2F"],
    ];
    for (const [method, path, body] of attempts) {
      const r = await call(api, method, path, A, body);
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(400);
      expect(r.type).toBe("application/problem+json");
      for (const leak of Object.keys(SECRET)) expect(r.text).not.toContain(leak);
    }
    expect(await backend.foreign("planted")).toBeNull();
    expect(JSON.parse((await backend.foreign("settings")) ?? JSON.stringify(SECRET))).toEqual(SECRET);
    expect(await everything(backend.store)).toEqual(before);

    // billing's owner goes on as if nothing happened: its name, its listing, its group.
    const job = await call(api, "POST", "/v1/leases/billing%2Fjob/acquire", BILLING, {
      holder: "billing",
      instance,
      leaseMs: 60_000,
    });
    expect(job.status).toBe(200);
    expect(JSON.parse(job.text)).toMatchObject({ leader: true, lease: { name: "billing/job", term: 1 } });
    const listing = await call(api, "GET", "/v1/leases?prefix=billing%2F", BILLING);
    expect(listing.status).toBe(200);
    expect(JSON.parse(listing.text).leases.map((l: { name: string }) => l.name)).toEqual([
      "billing/daily",
      "billing/job",
    ]);
    const beat = await call(api, "POST", "/v1/groups/billing%2Fgrp/members/m1/heartbeat", BILLING, {
      instance,
      leaseMs: 60_000,
      buckets: 4,
    });
    expect(beat.status).toBe(200);
    expect(JSON.parse(beat.text).held).toHaveLength(4);
  });
});

describe.each([
  {
    backend: "azure blob (azurite)",
    store: (prefix: string) =>
      new AzureBlobStore({
        container: `leases-${suffix}`,
        connectionString: azuriteConnectionString(azureEndpoint!),
        prefix,
      }),
  },
  {
    backend: "s3 (versitygw)",
    store: (prefix: string) =>
      new S3Store({
        bucket: `traversal-${suffix}`,
        endpoint: s3Endpoint!,
        region: S3_TEST_REGION,
        forcePathStyle: true,
        credentials: S3_TEST_CREDENTIALS,
        prefix,
      }),
  },
])("$backend with a prefix that could move", ({ store }) => {
  it("refuses to build any key under it: nothing is read or written outside", async () => {
    for (const prefix of ["leases/../appconfig/", "./", "leases/..\\appconfig/"]) {
      const s = store(prefix);
      await expect(s.put(makeRecord("x/y"), null), prefix).rejects.toBeInstanceOf(LeaseValidationError);
      await expect(s.get("settings"), prefix).rejects.toBeInstanceOf(LeaseValidationError);
      await (s as { close?: () => Promise<void> }).close?.();
    }
  });
});
