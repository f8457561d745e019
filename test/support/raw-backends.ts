/**
 * The stores a name reaches in the API's reproductions (issue #30: SQLite, Azure Blob over
 * azurite, S3 over versitygw), each fresh (its own file, container or bucket), with the test's own
 * access past the store: what a foreign tool or a bad migration writes, and the bytes the store
 * holds, so a test can say "unchanged" byte for byte. The servers are the ones test/servers/
 * started for this run.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import Database from "better-sqlite3";
import { AzureBlobStore } from "../../src/backends/azure-blob/store.js";
import { S3Store } from "../../src/backends/s3/store.js";
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import type { LeaseStore } from "../../src/lease.js";
import { AZURITE_ACCOUNT, AZURITE_KEY, azuriteConnectionString } from "../servers/azurite.server.js";
import { S3_TEST_CREDENTIALS, S3_TEST_REGION, s3TestClient } from "../servers/versitygw.server.js";

export interface RawBackend {
  store: LeaseStore;
  /** Writes `body` where the store keeps `name`, past the store. */
  write(name: string, body: string): Promise<void>;
  /** The bytes the store holds for `name`, and the backend's own version of them. */
  read(name: string): Promise<{ body: string; version: string }>;
  close(): Promise<void>;
}

const suffix = () => `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

export async function sqliteBackend(): Promise<RawBackend> {
  const dir = mkdtempSync(join(tmpdir(), "leasehold-raw-"));
  const path = join(dir, "leases.db");
  const store = new SqliteStore({ path });
  const raw = new Database(path);
  return {
    store,
    write: async (name, body) => {
      raw
        .prepare(
          "INSERT INTO leases (name, rev, record) VALUES (?, 1, ?) ON CONFLICT (name) DO UPDATE SET rev = rev + 1, record = excluded.record",
        )
        .run(name, body);
    },
    read: async (name) => {
      const row = raw.prepare("SELECT rev, record FROM leases WHERE name = ?").get(name) as
        | { rev: number; record: string }
        | undefined;
      return { body: row?.record ?? "", version: String(row?.rev ?? "") };
    },
    close: async () => {
      raw.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function azureBackend(): Promise<RawBackend> {
  const endpoint = process.env.AZURE_BLOB_ENDPOINT;
  if (!endpoint) throw new Error("azurite should have been started (test/servers/)");
  const credential = new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY);
  const container = `raw-${suffix()}`;
  const admin = new BlobServiceClient(endpoint, credential, { retryOptions: { maxTries: 1 } }).getContainerClient(
    container,
  );
  await admin.create();
  return {
    store: new AzureBlobStore({ container, connectionString: azuriteConnectionString(endpoint) }),
    write: async (name, body) => {
      await admin.getBlockBlobClient(`leases/${name}.json`).upload(body, Buffer.byteLength(body));
    },
    read: async (name) => {
      const blob = admin.getBlockBlobClient(`leases/${name}.json`);
      const properties = await blob.getProperties();
      return { body: (await blob.downloadToBuffer()).toString("utf8"), version: properties.etag ?? "" };
    },
    close: async () => undefined,
  };
}

export async function s3Backend(): Promise<RawBackend> {
  const endpoint = process.env.S3_ENDPOINT;
  if (!endpoint) throw new Error("versitygw should have been started (test/servers/)");
  const bucket = `raw-${suffix()}`;
  const admin = s3TestClient(endpoint, 1);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  const store = new S3Store({
    bucket,
    endpoint,
    region: S3_TEST_REGION,
    forcePathStyle: true,
    credentials: S3_TEST_CREDENTIALS,
  });
  return {
    store,
    write: async (name, body) => {
      await admin.send(new PutObjectCommand({ Bucket: bucket, Key: `leases/${name}.json`, Body: body }));
    },
    read: async (name) => {
      const out = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: `leases/${name}.json` }));
      return { body: (await out.Body?.transformToString()) ?? "", version: out.ETag ?? "" };
    },
    close: async () => {
      await store.close();
      admin.destroy();
    },
  };
}

/** The three, for `describe.each`. */
export const RAW_BACKENDS = [
  { backend: "sqlite", open: sqliteBackend },
  { backend: "azure blob (azurite)", open: azureBackend },
  { backend: "s3 (versitygw)", open: s3Backend },
] as const;
