/**
 * `leasehold doctor` (src/cli/doctor.ts): the store contract's safety cases against a store URL.
 * It passes on every local server the tests start, fails on an S3-compatible server that ignores
 * the conditions (a few lines of Node), and runs against any endpoint named in
 * DOCTOR_STORE_URLS (store URLs separated by spaces; their credentials from the
 * environment), so a user can run the contract against MinIO, R2 or Ceph with `npx vitest run
 * test/doctor.test.ts`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { Storage } from "@google-cloud/storage";
import { afterAll, describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { type DoctorReport, examine, minimumLeaseMs, scratchPrefix, writerOpener } from "../src/cli/doctor.js";
import { readable } from "../src/listing.js";
import { openStore } from "../src/open-store.js";
import { serve } from "../src/runtime/node.js";
import { AZURITE_ACCOUNT, azuriteConnectionString } from "./servers/azurite.server.js";
import { createTestBucket, S3_TEST_CREDENTIALS, S3_TEST_REGION } from "./servers/versitygw.server.js";
import { startApi, TOKENS } from "./support/api-server.js";
import { type CarelessS3, startCarelessS3 } from "./support/careless-s3.js";
import { CliProcesses } from "./support/cli-processes.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-doctor-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// The AWS SDK reads credentials from the process environment (versitygw's and dynalite's test keys).
Object.assign(process.env, {
  AWS_ACCESS_KEY_ID: S3_TEST_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: S3_TEST_CREDENTIALS.secretAccessKey,
});

let run = 0;
async function doctor(
  url: string,
  env: Record<string, string | undefined> = {},
  scratch = `leasehold-doctor/test-${run++}/`,
): Promise<DoctorReport> {
  const store = await openStore(url, { env });
  try {
    // Emulators have no write-rate limit to respect (fake-gcs-server): no pause between writes.
    // Each racing writer on a client of its own, as the command does.
    const openWriter = writerOpener(url, env);
    return await examine(store, {
      store: url,
      scratch,
      rounds: 5,
      writers: 10,
      pauseMs: 0,
      ...(openWriter ? { openWriter } : {}),
    });
  } finally {
    await store.close?.();
  }
}

const failures = (report: DoctorReport) => report.cases.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);

describe("leasehold doctor on every local server: every check passes", () => {
  it("sqlite:", async () => {
    expect(failures(await doctor(`sqlite:${join(dir, "doctor.db")}`))).toEqual([]);
  });

  it("memory:", async () => {
    expect(failures(await doctor("memory:"))).toEqual([]);
  });

  it("dynamodb:// on dynalite", async () => {
    const table = await createLeaseTable(dynamoClient(testEndpoint()));
    const report = await doctor(`dynamodb://${table}?endpoint=${testEndpoint()}`, { AWS_REGION: "us-east-1" });
    expect(failures(report)).toEqual([]);
  });

  it("gcs:// on fake-gcs-server", async () => {
    const endpoint = process.env.GCS_ENDPOINT!;
    const bucket = `doctor-${Date.now().toString(36)}`;
    await new Storage({ apiEndpoint: endpoint, projectId: "leasehold-test" }).createBucket(bucket);
    const report = await doctor(`gcs://${bucket}/?endpoint=${endpoint}&project=leasehold-test`);
    expect(failures(report)).toEqual([]);
  });

  it("s3:// on versitygw", async () => {
    const endpoint = process.env.S3_ENDPOINT!;
    const bucket = await createTestBucket(endpoint, "doctor");
    const report = await doctor(`s3://${bucket}/leases/?endpoint=${endpoint}&pathStyle=true`, {
      AWS_REGION: S3_TEST_REGION,
    });
    expect(failures(report)).toEqual([]);
    // The records it wrote are left released, under its own scratch prefix only.
    expect(report.leftReleased).toBeGreaterThan(0);
    expect(report.minimumLeaseMs).toBe(minimumLeaseMs(report.roundTrip?.write.p99 ?? Number.NaN, undefined));
  });

  it("azblob:// on azurite", async () => {
    const endpoint = process.env.AZURE_BLOB_ENDPOINT!;
    const container = `doctor-${Date.now().toString(36)}`;
    await BlobServiceClient.fromConnectionString(azuriteConnectionString(endpoint))
      .getContainerClient(container)
      .create();
    const report = await doctor(`azblob://${AZURITE_ACCOUNT}/${container}/`, {
      AZURE_STORAGE_CONNECTION_STRING: azuriteConnectionString(endpoint),
    });
    expect(failures(report)).toEqual([]);
  });

  it("http:// on the API", async () => {
    const server = await serve({ store: new MemoryStore(), port: 0, insecureNoAuth: true });
    try {
      expect(failures(await doctor(server.url))).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("http:// on the API with a token scoped to a prefix: --prefix puts every record under it", async () => {
    const api = await startApi();
    try {
      const env = { LEASEHOLD_TOKEN: TOKENS.adapters };
      const report = await doctor(api.url, env, scratchPrefix("adapters/"));
      expect(failures(report)).toEqual([]);
      expect(report.scratch).toMatch(/^adapters\/leasehold-doctor\/\d{14}-[0-9a-f]{8}\/$/);
      const records: Array<{ name: string; holder: string | null }> = [];
      for await (const s of readable(api.store.list!(""))) records.push(s.record);
      // Besides the run's records, only the API's own count of the token's records (its quota).
      expect(records.filter((r) => !r.name.startsWith(report.scratch) && !r.name.startsWith("_quota/"))).toEqual([]);
      const released = records.filter((r) => r.name.startsWith(report.scratch) && r.holder === null);
      expect(released).toHaveLength(report.leftReleased);
    } finally {
      await api.close();
    }
  });

  it("--prefix must be a prefix ending in /", () => {
    expect(() => scratchPrefix("team-a")).toThrow(/--prefix: expected "" or a prefix ending in "\/"/);
    expect(() => scratchPrefix("../x/")).toThrow(/lease prefix/);
  });

  const external = (process.env.DOCTOR_STORE_URLS ?? "").split(/\s+/).filter((url) => url !== "");
  for (const url of external) {
    it(`DOCTOR_STORE_URLS: ${url}`, async () => {
      const store = await openStore(url, { env: process.env });
      try {
        const report = await examine(store, {
          store: url,
          scratch: `leasehold-doctor/test-${Date.now()}/`,
          rounds: 30,
          writers: 20,
        });
        expect(failures(report)).toEqual([]);
      } finally {
        await store.close?.();
      }
    }, 600_000);
  }
});

describe("leasehold doctor as a command", () => {
  const procs = new CliProcesses();
  afterAll(() => procs.killAll());

  it("fails on a server that ignores If-None-Match and If-Match: exit 1, a FAIL row naming what it accepted", async () => {
    const server = await startCarelessS3("ignores-conditions");
    try {
      const url = `s3://leases/?region=us-east-1&pathStyle=true&endpoint=${encodeURIComponent(server.endpoint)}`;
      const cli = procs.start(["doctor", url, "--rounds", "3"]);
      expect((await cli.exited).code).toBe(1);
      expect(cli.stdout()).toMatch(/^FAIL +create if absent/m);
      expect(cli.stdout()).toContain("it accepted a PUT with If-None-Match: * on an object that exists");
      expect(cli.stdout()).toMatch(/checks FAILED: do not use this store for leases/);
    } finally {
      await server.close();
    }
  });

  it("fails on a server that races its conditional writes (moto's flaw, widened): the two races FAIL, each writer on a connection of its own", async () => {
    const server: CarelessS3 = await startCarelessS3("racy");
    try {
      const url = `s3://leases/?region=us-east-1&pathStyle=true&endpoint=${encodeURIComponent(server.endpoint)}`;
      // More writers than one AWS SDK client opens connections (50): on one shared client, 10 of
      // them would wait for a connection, after the race.
      const writers = 60;
      const cli = procs.start(["doctor", url, "--rounds", "10", "--writers", String(writers), "--json"]);
      expect((await cli.exited).code).toBe(1);
      const report = JSON.parse(cli.stdout()) as DoctorReport;
      const failed = report.cases.filter((c) => !c.ok);
      expect(failed.map((c) => c.name)).toEqual([
        "concurrent creates of one lease, many rounds: exactly one wins each round",
        "concurrent compare-and-swaps on one revision, many rounds: exactly one wins each round",
      ]);
      for (const c of failed)
        expect(c.detail).toMatch(new RegExp(`round \\d+ of 10: \\d+ of ${writers} writers were told they won`));
      // Each round's racing PUTs came on `writers` connections (client ports): one each.
      const puts = server.requests.filter((r) => r.method === "PUT" && /-race-\d+\.json$/.test(r.key));
      const rounds = new Set(puts.map((r) => r.key));
      expect(rounds.size).toBeGreaterThanOrEqual(2);
      for (const key of rounds) {
        const ports = new Set(puts.filter((r) => r.key === key).map((r) => r.port));
        expect(ports.size, key).toBeGreaterThanOrEqual(writers);
      }
    } finally {
      await server.close();
    }
  });

  it("passes on SQLite: exit 0, every row passes, the round trips and the shortest safe leaseMs", async () => {
    const cli = procs.start(["doctor", `sqlite:${join(dir, "cli.db")}`, "--rounds", "3", "--json"]);
    expect((await cli.exited).code).toBe(0);
    const report = JSON.parse(cli.stdout()) as DoctorReport;
    expect(report.passed).toBe(true);
    expect(report.cases.map((c) => c.ok)).toEqual(report.cases.map(() => true));
    expect(report.cases.length).toBeGreaterThanOrEqual(8);
    expect(report.minimumLeaseMs).toBeGreaterThanOrEqual(100);
    expect(report.scratch).toMatch(/^leasehold-doctor\/\d{14}-[0-9a-f]{8}\/$/);
  });
});
