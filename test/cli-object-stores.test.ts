/**
 * `leasehold run --store s3://...` and `--store azblob://...` as real OS processes against
 * versitygw and azurite: the first wrapper is elected and runs its command, the second sees it
 * holding, and on SIGTERM to the first the lease is released and the second takes over at term 2.
 * `leasehold serve` on the same URLs serves the API, and `leasehold status` lists through the store.
 * Credentials reach the CLI the way they would in production: through its environment.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { afterAll, describe, expect, it } from "vitest";
import { AzureBlobStore } from "../src/backends/azure-blob/store.js";
import { S3Store } from "../src/backends/s3/store.js";
import type { LeaseStore } from "../src/lease.js";
import { AZURITE_ACCOUNT, azuriteConnectionString } from "./servers/azurite.server.js";
import { createTestBucket, S3_TEST_CREDENTIALS, S3_TEST_REGION } from "./servers/versitygw.server.js";
import { TEST_INSTANCE } from "./support/api-server.js";
import { CliProcesses, jobCommand, readLog, until } from "./support/cli-processes.js";

const root = mkdtempSync(join(tmpdir(), "leasehold-cli-objects-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Target {
  url: string;
  env: Record<string, string>;
  store: LeaseStore;
}

async function s3Target(): Promise<Target> {
  const endpoint = process.env.S3_ENDPOINT;
  if (!endpoint) throw new Error("S3_ENDPOINT is not set: test/servers/versitygw.server.ts should have started");
  const bucket = await createTestBucket(endpoint, "cli");
  return {
    url: `s3://${bucket}/leases/?endpoint=${endpoint}&pathStyle=true`,
    env: {
      AWS_REGION: S3_TEST_REGION,
      AWS_ACCESS_KEY_ID: S3_TEST_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_TEST_CREDENTIALS.secretAccessKey,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    },
    store: new S3Store({
      bucket,
      endpoint,
      region: S3_TEST_REGION,
      forcePathStyle: true,
      credentials: S3_TEST_CREDENTIALS,
    }),
  };
}

async function azureTarget(): Promise<Target> {
  const endpoint = process.env.AZURE_BLOB_ENDPOINT;
  if (!endpoint) throw new Error("AZURE_BLOB_ENDPOINT is not set: test/servers/azurite.server.ts should have started");
  const container = `cli-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
  const connectionString = azuriteConnectionString(endpoint);
  await BlobServiceClient.fromConnectionString(connectionString).getContainerClient(container).create();
  return {
    url: `azblob://${AZURITE_ACCOUNT}/${container}/leases/`,
    env: { AZURE_STORAGE_CONNECTION_STRING: connectionString },
    store: new AzureBlobStore({ container, connectionString }),
  };
}

describe.each([
  ["s3://", s3Target],
  ["azblob://", azureTarget],
])("leasehold run --store %s", (_scheme, target) => {
  it("elects one leader, which runs the command; on SIGTERM it releases and the other takes over at term 2", async ({
    onTestFinished,
  }) => {
    const { url, env, store } = await target();
    const dir = mkdtempSync(join(root, "t-"));
    const log = join(dir, "job.log");
    const procs = new CliProcesses(env);
    onTestFinished(() => procs.killAll());
    const wrapper = (identity: string) =>
      procs.start([
        "run",
        "--lease",
        "jobs/nightly",
        "--store",
        url,
        "--identity",
        identity,
        "--lease-ms",
        "4000",
        "--",
        ...jobCommand(log, "sleep"),
      ]);
    const started = (identity: string) => () =>
      readLog(log).find((l) => l.identity === identity && l.event === "start");

    const a = wrapper("A");
    await until("A's command to start", started("A"));
    expect((await store.get("jobs/nightly"))?.record).toMatchObject({ holder: "A", term: 1 });
    const b = wrapper("B");
    await until("B to see A holding", () => b.stderr().includes("is held by A (term 1)"));
    expect(
      readLog(log)
        .filter((l) => l.event === "start")
        .map((l) => l.identity),
    ).toEqual(["A"]);

    a.child.kill("SIGTERM");
    expect((await a.exited).code).toBe(0);
    await until("B's command to start", started("B"));
    expect((await store.get("jobs/nightly"))?.record).toMatchObject({ holder: "B", term: 2 });
    // A's command stopped before B's started.
    const lines = readLog(log);
    const aStop = lines.find((l) => l.identity === "A" && l.event === "stop");
    const bStart = lines.find((l) => l.identity === "B" && l.event === "start");
    expect(aStop!.at).toBeLessThanOrEqual(bStart!.at);
  });

  it("serve: the API on this store (acquire over HTTP lands in the bucket); status lists it", async ({
    onTestFinished,
  }) => {
    const { url, env, store } = await target();
    const procs = new CliProcesses(env);
    onTestFinished(() => procs.killAll());
    const server = procs.start(["serve", "--port", "0", "--store", url, "--json"]);
    const { url: api } = await until("the listening address", () => {
      const line = server.stdout().split("\n")[0];
      return line ? (JSON.parse(line) as { url: string }) : undefined;
    });
    const response = await fetch(`${api}/v1/leases/${encodeURIComponent("adapters/billing")}/acquire`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ holder: "pod-a", instance: TEST_INSTANCE, leaseMs: 15_000 }),
    });
    expect(response.status).toBe(200);
    expect((await store.get("adapters/billing"))?.record).toMatchObject({ holder: "pod-a", term: 1 });
    const status = await procs.run(["status", "adapters/", "--store", url, "--json"]);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject([{ name: "adapters/billing", holder: "pod-a", term: 1 }]);
    server.child.kill("SIGTERM");
    expect((await server.exited).code).toBe(0);
  });
});
