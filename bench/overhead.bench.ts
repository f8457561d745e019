/**
 * Library overhead per backend: one compare-and-swap as the raw client call, through the store's
 * `put`, and as a full Elector renewal (from the renewal being sent to the `renewed` event: record
 * building, the call timeout race, the store call, adopting the result, re-arming the watchdog).
 * - memory: raw = a hand-written Map compare-and-set (no validation, no copies);
 * - sqlite: raw = the store's `UPDATE ... WHERE name = ? AND rev = ?` through better-sqlite3 directly;
 * - http: raw = one `fetch` PUT with If-Match to a local `serve()` on SQLite (same process);
 * - s3: raw = the SDK's PutObject with If-Match, the same client settings the store uses, on
 *   versitygw; azure blob: raw = the SDK's upload with ifMatch, on azurite. For these two the raw
 *   call and store.put alternate call by call, so both meet the same server and machine load.
 * DynamoDB and GCS have their own benchmarks (dynamodb.bench.ts, gcs.bench.ts) with the same rows;
 * they are referenced here, not repeated.
 */
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { BlobServiceClient } from "@azure/storage-blob";
import Database from "better-sqlite3";
import { AzureBlobStore } from "../src/backends/azure-blob/store.js";
import { HttpStore } from "../src/backends/http/store.js";
import { MemoryStore } from "../src/backends/memory/store.js";
import { S3Store } from "../src/backends/s3/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { Elector } from "../src/leader/elector.js";
import { type LeaseRecord, type LeaseStore, newWriteId, type Stored } from "../src/lease.js";
import { serve } from "../src/runtime/node.js";
import { startAzurite } from "../test/servers/azurite.server.js";
import { S3_TEST_CREDENTIALS, S3_TEST_REGION, startVersitygw } from "../test/servers/versitygw.server.js";
import { benchRecord, machineLoad, QUICK, tempDir } from "./support/common.js";
import { median, quantile, type Table, timeCalls } from "./table.js";

const N = QUICK ? 200 : 2000;
/** Renewals timed through a real Elector (each waits renewMs on a timer, so fewer). */
const RENEWALS = QUICK ? 100 : 500;
/** Calls per row for the emulated object stores (about 10 ms each on loopback). */
const N_OBJECT = QUICK ? 100 : 500;
const RENEWALS_OBJECT = QUICK ? 50 : 200;

type Samples = { raw: number[]; put: number[]; renewal: number[] };

/** store.put chained on its own revisions, one call at a time. */
async function timePut(store: LeaseStore, name: string): Promise<number[]> {
  let held: Stored = await store.put(benchRecord(name), null);
  return timeCalls(N, async () => {
    held = await store.put({ ...held.record, renewedAt: Date.now(), writeId: newWriteId() }, held.revision);
  });
}

/**
 * The raw call and store.put, alternating call by call (each on its own lease), so a change in
 * server or machine load affects both alike. Returns [raw, put] samples.
 */
async function timeAlternating(
  n: number,
  raw: () => Promise<unknown>,
  store: LeaseStore,
  name: string,
): Promise<[number[], number[]]> {
  let held: Stored = await store.put(benchRecord(name), null);
  const put = () => store.put({ ...held.record, renewedAt: Date.now(), writeId: newWriteId() }, held.revision);
  for (let i = 0; i < 20; i++) {
    await raw();
    held = await put();
  }
  const rawSamples: number[] = [];
  const putSamples: number[] = [];
  for (let i = 0; i < n; i++) {
    let t0 = performance.now();
    await raw();
    rawSamples.push(performance.now() - t0);
    t0 = performance.now();
    held = await put();
    putSamples.push(performance.now() - t0);
  }
  return [rawSamples, putSamples];
}

/** A real Elector renewing as fast as its timer allows; each sample is send -> `renewed`. */
async function timeElectorRenewals(store: LeaseStore, name: string, renewals = RENEWALS): Promise<number[]> {
  const elector = new Elector({
    store,
    name,
    identity: "bench",
    leaseMs: 2000,
    renewMs: 1,
    // The default (renewMs) would turn a 1 ms scheduling hiccup into an ambiguous write.
    callTimeoutMs: 1000,
  });
  const samples: number[] = [];
  let warmup = 20;
  const done = new Promise<void>((resolve) => {
    elector.on("renewed", () => {
      const sentAt = elector.current.lastRenewalSentAt ?? Number.NaN;
      if (warmup-- > 0) return;
      samples.push(performance.now() - sentAt);
      if (samples.length >= renewals) resolve();
    });
  });
  elector.start();
  await done;
  await elector.stop({ release: false });
  return samples;
}

async function memorySamples(): Promise<Samples> {
  const map = new Map<string, { rev: number; record: LeaseRecord }>();
  let rev = 0;
  map.set("raw", { rev, record: benchRecord("raw") });
  const raw = await timeCalls(N, async () => {
    const current = map.get("raw");
    if (current?.rev !== rev) throw new Error("conflict");
    map.set("raw", { rev: ++rev, record: { ...current.record, renewedAt: Date.now(), writeId: newWriteId() } });
  });
  const store = new MemoryStore();
  return { raw, put: await timePut(store, "put"), renewal: await timeElectorRenewals(store, "renew") };
}

async function sqliteSamples(path: (file: string) => string): Promise<Samples> {
  const file = path("overhead.db");
  const store = new SqliteStore({ path: file });
  // The same table and statement the store prepares, on a connection of our own.
  const db = new Database(file);
  const update = db.prepare("UPDATE leases SET rev = rev + 1, record = ? WHERE name = ? AND rev = ?");
  const first = await store.put(benchRecord("raw"), null);
  let rev = Number(first.revision);
  const raw = await timeCalls(N, async () => {
    const json = JSON.stringify({ ...first.record, renewedAt: Date.now(), writeId: newWriteId() });
    if (update.run(json, "raw", rev).changes !== 1) throw new Error("conflict");
    rev++;
  });
  const samples = { raw, put: await timePut(store, "put"), renewal: await timeElectorRenewals(store, "renew") };
  db.close();
  await store.close();
  return samples;
}

async function httpSamples(path: (file: string) => string): Promise<Samples> {
  const sqlite = new SqliteStore({ path: path("http.db") });
  const server = await serve({ store: sqlite, host: "127.0.0.1", port: 0, insecureNoAuth: true });
  try {
    const store = new HttpStore({ baseUrl: server.url });
    const first = await store.put(benchRecord("raw"), null);
    let revision = first.revision;
    const raw = await timeCalls(N, async () => {
      const { name: _name, renewedAt: _renewedAt, ...body } = first.record;
      const response = await fetch(`${server.url}/v1/leases/raw`, {
        method: "PUT",
        headers: { "content-type": "application/json", "if-match": `"${revision}"` },
        body: JSON.stringify({ ...body, writeId: newWriteId() }),
      });
      if (response.status !== 200) throw new Error(`PUT answered ${response.status}`);
      revision = ((await response.json()) as { revision: string }).revision;
    });
    return { raw, put: await timePut(store, "put"), renewal: await timeElectorRenewals(store, "renew") };
  } finally {
    await server.close();
    await sqlite.close();
  }
}

async function s3Samples(): Promise<Samples> {
  const server = await startVersitygw();
  const bucket = `bench-${Date.now().toString(36)}`;
  // The settings S3Store gives the client it creates: one attempt, the same timeouts.
  const client = new S3Client({
    endpoint: server.endpoint,
    region: S3_TEST_REGION,
    forcePathStyle: true,
    credentials: S3_TEST_CREDENTIALS,
    maxAttempts: 1,
    requestHandler: { requestTimeout: 10_000, connectionTimeout: 10_000, throwOnRequestTimeout: true },
  });
  const store = new S3Store({
    bucket,
    endpoint: server.endpoint,
    region: S3_TEST_REGION,
    forcePathStyle: true,
    credentials: S3_TEST_CREDENTIALS,
  });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    const send = (condition: { IfNoneMatch: string } | { IfMatch: string }) =>
      client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: "raw/lease.json",
          Body: JSON.stringify(benchRecord("raw")),
          ContentType: "application/json",
          CacheControl: "no-store",
          ...condition,
        }),
      );
    let etag = (await send({ IfNoneMatch: "*" })).ETag!;
    const [raw, put] = await timeAlternating(
      N_OBJECT,
      async () => {
        etag = (await send({ IfMatch: etag })).ETag!;
      },
      store,
      "put",
    );
    return { raw, put, renewal: await timeElectorRenewals(store, "renew", RENEWALS_OBJECT) };
  } finally {
    client.destroy();
    await store.close();
    await server.stop();
  }
}

async function azureSamples(): Promise<Samples> {
  const server = await startAzurite();
  const containerName = `bench-${Date.now().toString(36)}`;
  // The settings AzureBlobStore gives the client it creates: one try per request.
  const container = BlobServiceClient.fromConnectionString(server.connectionString, {
    retryOptions: { maxTries: 1 },
  }).getContainerClient(containerName);
  const store = new AzureBlobStore({ container: containerName, connectionString: server.connectionString });
  try {
    await container.create();
    const blob = container.getBlockBlobClient("raw/lease.json");
    const send = async (conditions: { ifNoneMatch: string } | { ifMatch: string }) => {
      const body = new TextEncoder().encode(JSON.stringify(benchRecord("raw")));
      return blob.upload(body, body.byteLength, {
        conditions,
        blobHTTPHeaders: { blobContentType: "application/json", blobCacheControl: "no-store" },
      });
    };
    let etag = (await send({ ifNoneMatch: "*" })).etag!;
    const [raw, put] = await timeAlternating(
      N_OBJECT,
      async () => {
        etag = (await send({ ifMatch: etag })).etag!;
      },
      store,
      "put",
    );
    return { raw, put, renewal: await timeElectorRenewals(store, "renew", RENEWALS_OBJECT) };
  } finally {
    await server.stop();
  }
}

export async function run(): Promise<Table[]> {
  const dir = tempDir("overhead");
  const rows: Array<Array<string | number>> = [];
  const us = (ms: number) => ms * 1000;
  try {
    const backends: Array<[string, string, () => Promise<Samples>]> = [
      ["memory", "hand-written Map compare-and-set", memorySamples],
      ["sqlite", "better-sqlite3 UPDATE ... WHERE rev = ?", () => sqliteSamples(dir.path)],
      ["http → sqlite", "fetch PUT with If-Match", () => httpSamples(dir.path)],
      ["s3 (versitygw)", "SDK PutObject with If-Match", s3Samples],
      ["azure blob (azurite)", "SDK upload with ifMatch", azureSamples],
    ];
    for (const [backend, rawLabel, measure] of backends) {
      const s = await measure();
      const base = median(s.raw);
      const row = (what: string, samples: number[]) => [
        backend,
        what,
        us(median(samples)),
        us(quantile(samples, 0.99)),
        median(samples) / base,
      ];
      rows.push(row(`raw: ${rawLabel}`, s.raw), row("store.put", s.put), row("Elector renewal", s.renewal));
    }
  } finally {
    dir.remove();
  }
  for (const backend of ["dynamodb", "gcs"]) {
    rows.push([
      backend,
      `see the ${backend}.bench.ts table in the same run (raw SDK vs store vs renewal)`,
      "-",
      "-",
      "-",
    ]);
  }
  return [
    {
      title: "Library overhead: one CAS raw vs store.put vs an Elector renewal",
      note:
        `One call at a time on one lease, ${N} store calls after 20 warm-up calls, ${RENEWALS} Elector renewals ` +
        `(renewMs 1) after 20; for S3 and Azure ${N_OBJECT} raw calls and store.put calls alternating, and ` +
        `${RENEWALS_OBJECT} renewals; µs. Ratio = median / raw median. The HTTP server runs in the same process as the ` +
        `client; versitygw and azurite are local processes. ${machineLoad()} at the end.`,
      columns: ["backend", "operation", "median µs", "p99 µs", "ratio to raw"],
      rows,
    },
  ];
}
