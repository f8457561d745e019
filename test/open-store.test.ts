/** Store URLs: parsing is pure and exact; opening works for every backend whose module exists. */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import { BlobServiceClient } from "@azure/storage-blob";
import { Storage } from "@google-cloud/storage";
import { afterAll, describe, expect, it, vi } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { LeaseValidationError } from "../src/errors.js";
import { loadStoreModuleForTest, openStore, parseStoreUrl, STORE_URL_FORMS } from "../src/open-store.js";
import { serve } from "../src/runtime/node.js";
import { makeRecord } from "../src/testkit/store-contract.js";
import { AZURITE_ACCOUNT, AZURITE_KEY, azuriteConnectionString } from "./servers/azurite.server.js";
import { createTestBucket, S3_TEST_CREDENTIALS, S3_TEST_REGION, s3TestClient } from "./servers/versitygw.server.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-open-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function rejection(url: string): LeaseValidationError {
  try {
    parseStoreUrl(url);
  } catch (error) {
    expect(error).toBeInstanceOf(LeaseValidationError);
    return error as LeaseValidationError;
  }
  throw new Error(`expected ${url} to be rejected`);
}

describe("parseStoreUrl", () => {
  it.each([
    ["memory:", { kind: "memory" }],
    ["sqlite:./data/leasehold.db", { kind: "sqlite", path: "./data/leasehold.db" }],
    ["sqlite:/var/lib/leasehold/leases.db", { kind: "sqlite", path: "/var/lib/leasehold/leases.db" }],
    ["sqlite::memory:", { kind: "sqlite", path: ":memory:" }],
    ["sqlite:relative name#1?.db", { kind: "sqlite", path: "relative name#1?.db" }],
    ["dynamodb://leases", { kind: "dynamodb", table: "leases" }],
    [
      "dynamodb://My_Table.v2?region=eu-west-1&endpoint=http://127.0.0.1:8000&pk=leaseName&ttl=expiresAt",
      {
        kind: "dynamodb",
        table: "My_Table.v2",
        region: "eu-west-1",
        endpoint: "http://127.0.0.1:8000",
        partitionKey: "leaseName",
        ttlAttribute: "expiresAt",
      },
    ],
    ["gcs://my-bucket", { kind: "gcs", bucket: "my-bucket" }],
    ["gcs://my-bucket/", { kind: "gcs", bucket: "my-bucket" }],
    [
      "gcs://my-bucket/leasehold/prod/?endpoint=http://127.0.0.1:4443&project=demo",
      {
        kind: "gcs",
        bucket: "my-bucket",
        prefix: "leasehold/prod/",
        endpoint: "http://127.0.0.1:4443",
        projectId: "demo",
      },
    ],
    ["s3://my-bucket", { kind: "s3", bucket: "my-bucket" }],
    [
      "s3://my.bucket-1/leasehold/prod/?region=eu-west-1&endpoint=http://127.0.0.1:7070&pathStyle=true",
      {
        kind: "s3",
        bucket: "my.bucket-1",
        prefix: "leasehold/prod/",
        region: "eu-west-1",
        endpoint: "http://127.0.0.1:7070",
        forcePathStyle: true,
      },
    ],
    ["s3://my-bucket/?pathStyle=false", { kind: "s3", bucket: "my-bucket", forcePathStyle: false }],
    ["azblob://myaccount/leases", { kind: "azure-blob", account: "myaccount", container: "leases" }],
    [
      "azblob://devstoreaccount1/my-leases/prod/a/?endpoint=http://127.0.0.1:10000/devstoreaccount1",
      {
        kind: "azure-blob",
        account: "devstoreaccount1",
        container: "my-leases",
        prefix: "prod/a/",
        endpoint: "http://127.0.0.1:10000/devstoreaccount1",
      },
    ],
    ["http://127.0.0.1:8080", { kind: "http", baseUrl: "http://127.0.0.1:8080/" }],
    ["https://leases.example.com/base/", { kind: "http", baseUrl: "https://leases.example.com/base/" }],
  ])("%s", (url, expected) => {
    expect(parseStoreUrl(url)).toEqual(expected);
  });

  it.each([
    ["", "URL"],
    ["leases.db", "scheme"],
    ["redis://localhost", "scheme"],
    ["memory:extra", "memory: URL"],
    ["sqlite:", "sqlite path"],
    ["sqlite://host/x.db", "sqlite path"],
    ["dynamodb:leases", "dynamodb URL"],
    ["dynamodb://", "dynamodb table"],
    ["dynamodb://ab", "dynamodb table"],
    ["dynamodb://leases:8000", "dynamodb table"],
    ["dynamodb://leases/extra", "dynamodb path"],
    ["dynamodb://leases?region=eu-west-1&table=x", 'query parameter "table"'],
    ["dynamodb://leases?region=", 'query parameter "region"'],
    ["dynamodb://leases?region=a&region=b", 'query parameter "region"'],
    ["dynamodb://leases?endpoint=localhost:8000", 'query parameter "endpoint"'],
    ["dynamodb://leases?pk=1abc", 'query parameter "pk"'],
    ["dynamodb://leases?ttl=no%20spaces", 'query parameter "ttl"'],
    ["gcs://Bad_Bucket!", "gcs bucket"],
    ["gcs://b", "gcs bucket"],
    ["gcs://bucket//x", "gcs prefix"],
    ["gcs://bucket?region=x", 'query parameter "region"'],
    ["s3:bucket", "s3 URL"],
    ["s3://Bad_Bucket", "s3 bucket"],
    ["s3://ab", "s3 bucket"],
    ["s3://bucket:9000/x", "s3 bucket"],
    ["s3://key:secret@bucket/", "credentials"],
    ["s3://bucket//x", "s3 prefix"],
    ["s3://bucket?region=EU", 'query parameter "region"'],
    ["s3://bucket?pathStyle=yes", 'query parameter "pathStyle"'],
    ["s3://bucket?project=p", 'query parameter "project"'],
    ["azblob:account/container", "azblob URL"],
    ["azblob://Account/container", "azblob account"],
    ["azblob://account", "azblob container"],
    ["azblob://account/Bad--Name", "azblob container"],
    ["azblob://account/container//x", "azblob prefix"],
    ["azblob://account/container?region=x", 'query parameter "region"'],
    ["azblob://account:10000/container", "azblob account"],
    ["http://user:secret@host/", "credentials"],
    ["http://host/?token=x", "query"],
    ["https://host/#frag", "fragment"],
  ])("rejects %j naming %s", (url, part) => {
    const error = rejection(url);
    expect(error.issues[0]?.path).toBe(part);
    // Every message lists what would have been accepted.
    for (const form of STORE_URL_FORMS) expect(error.message).toContain(form);
  });

  it("never echoes credentials it rejects", () => {
    expect(rejection("http://user:secret@host/").message).not.toContain("secret");
  });
});

describe("openStore", () => {
  it("memory: a working store", async () => {
    const store = await openStore("memory:");
    const stored = await store.put(makeRecord("a"), null);
    expect((await store.get("a"))?.revision).toBe(stored.revision);
  });

  it("sqlite: a file shared by two opens", async () => {
    const url = `sqlite:${join(dir, "nested", "open.db")}`;
    const one = await openStore(url);
    const two = await openStore(url);
    await one.put(makeRecord("shared"), null);
    expect((await two.get("shared"))?.record.name).toBe("shared");
    await one.close?.();
    await two.close?.();
  });

  it("sqlite::memory:", async () => {
    const store = await openStore("sqlite::memory:");
    await store.put(makeRecord("m"), null);
    expect(await store.get("m")).not.toBeNull();
    await store.close?.();
  });

  it("a bad URL is a validation error before anything is loaded", async () => {
    await expect(openStore("ftp://x")).rejects.toThrow(/invalid store URL: scheme: unknown scheme "ftp:"/);
  });

  it("dynamodb without a region says where a region comes from", async () => {
    await expect(openStore("dynamodb://leases", { env: {} })).rejects.toThrow(/region.*AWS_REGION/);
  });

  it("s3 without a region says where a region comes from", async () => {
    await expect(openStore("s3://bucket", { env: {} })).rejects.toThrow(/region.*AWS_REGION/);
  });

  it("azblob names the environment variables it takes credentials from, and checks the account", async () => {
    await expect(openStore("azblob://account/container", { env: {} })).rejects.toThrow(
      /azblob credentials: expected AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN/,
    );
    const env = { AZURE_STORAGE_CONNECTION_STRING: "AccountName=other;AccountKey=a2V5;BlobEndpoint=http://x" };
    await expect(openStore("azblob://account/container", { env })).rejects.toThrow(
      /the URL names account "account" but AZURE_STORAGE_CONNECTION_STRING is for "other"/,
    );
  });

  it("a missing store module is named as such", async () => {
    // Exercised through the same loader with a module that does not exist in any build.
    await expect(loadStoreModuleForTest("dynamodb", "./backends/no-such/store.js")).rejects.toThrow(
      /the dynamodb store is not available in this build of leasehold \(module \.\/backends\/no-such\/store\.js not found\)/,
    );
  });
});

describe("openStore against the real servers", () => {
  it("dynamodb://: a table on dynalite, credentials from the SDK's environment chain", async () => {
    const endpoint = testEndpoint();
    const admin = dynamoClient(endpoint);
    const table = await createLeaseTable(admin, "leaseName");
    vi.stubEnv("AWS_ACCESS_KEY_ID", "leasehold-test");
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", "leasehold-test");
    try {
      const store = await openStore(`dynamodb://${table}?endpoint=${endpoint}&pk=leaseName&ttl=expiresAt`, {
        env: { AWS_REGION: "us-east-1" },
      });
      const written = await store.put(makeRecord("via/url"), null);
      expect(await store.get("via/url")).toEqual(written);
      // ?ttl= reaches the store: the item carries the TTL attribute in epoch seconds.
      const item = await admin.send(new GetItemCommand({ TableName: table, Key: { leaseName: { S: "via/url" } } }));
      expect(Number(item.Item?.expiresAt?.N)).toBeGreaterThan(written.record.renewedAt / 1000);
      await store.close?.();
    } finally {
      vi.unstubAllEnvs();
      admin.destroy();
    }
  });

  it("gcs://: objects under the URL's prefix on fake-gcs-server", async () => {
    const endpoint = process.env.GCS_ENDPOINT;
    if (!endpoint) throw new Error("GCS_ENDPOINT is not set: test/servers/fake-gcs.server.ts should have started");
    const bucketName = `open-store-${Date.now().toString(36)}`;
    const admin = new Storage({ apiEndpoint: endpoint, projectId: "leasehold-test" });
    await admin.createBucket(bucketName);
    const store = await openStore(`gcs://${bucketName}/via-url/?endpoint=${endpoint}`, {
      env: { GOOGLE_CLOUD_PROJECT: "leasehold-test" },
    });
    const written = await store.put(makeRecord("a"), null);
    expect(await store.get("a")).toEqual(written);
    const [exists] = await admin.bucket(bucketName).file("via-url/a.json").exists();
    expect(exists).toBe(true);
    await store.close?.();
  });

  it("s3://: objects under the URL's prefix on versitygw, credentials from the SDK's environment chain", async () => {
    const endpoint = process.env.S3_ENDPOINT;
    if (!endpoint) throw new Error("S3_ENDPOINT is not set: test/servers/versitygw.server.ts should have started");
    const bucket = await createTestBucket(endpoint, "open-store");
    const admin = s3TestClient(endpoint);
    vi.stubEnv("AWS_ACCESS_KEY_ID", S3_TEST_CREDENTIALS.accessKeyId);
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", S3_TEST_CREDENTIALS.secretAccessKey);
    try {
      const store = await openStore(`s3://${bucket}/via-url/?endpoint=${endpoint}&pathStyle=true`, {
        env: { AWS_REGION: S3_TEST_REGION },
      });
      const written = await store.put(makeRecord("a"), null);
      expect(await store.get("a")).toEqual(written);
      const head = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: "via-url/a.json" }));
      expect(head.ETag).toBe(written.revision);
      await store.close?.();
    } finally {
      vi.unstubAllEnvs();
      admin.destroy();
    }
  });

  it("azblob://: blobs under the URL's prefix on azurite, with a connection string or an account key", async () => {
    const endpoint = process.env.AZURE_BLOB_ENDPOINT;
    if (!endpoint)
      throw new Error("AZURE_BLOB_ENDPOINT is not set: test/servers/azurite.server.ts should have started");
    const containerName = `open-store-${Date.now().toString(36)}`;
    const admin = BlobServiceClient.fromConnectionString(azuriteConnectionString(endpoint));
    await admin.getContainerClient(containerName).create();
    const url = `azblob://${AZURITE_ACCOUNT}/${containerName}/via-url/`;
    const byString = await openStore(url, {
      env: { AZURE_STORAGE_CONNECTION_STRING: azuriteConnectionString(endpoint) },
    });
    const written = await byString.put(makeRecord("a"), null);
    const byKey = await openStore(`${url}?endpoint=${endpoint}`, { env: { AZURE_STORAGE_KEY: AZURITE_KEY } });
    expect(await byKey.get("a")).toEqual(written);
    const properties = await admin.getContainerClient(containerName).getBlobClient("via-url/a.json").getProperties();
    expect(properties.etag).toBe(written.revision);
  });

  it("http://: the API, with the token taken from LEASEHOLD_TOKEN in the given env", async () => {
    const token = "open-store-test-token-0123456789";
    const server = await serve({
      store: new MemoryStore(),
      port: 0,
      tokens: [{ token, prefixes: [""], verbs: ["read", "write", "cas"] }],
    });
    try {
      const store = await openStore(server.url, { env: { LEASEHOLD_TOKEN: token } });
      const written = await store.put(makeRecord("remote"), null);
      expect((await store.get("remote"))?.revision).toBe(written.revision);
      const anonymous = await openStore(server.url, { env: {} });
      await expect(anonymous.get("remote")).rejects.toThrow();
    } finally {
      await server.close();
    }
  });
});
