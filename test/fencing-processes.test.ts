/**
 * docs/fencing.md's first claim, with real processes and a real SIGSTOP, for every fence: a leader
 * paused between its leadership check and its write wakes up after its lease has passed to another
 * process, and writes with its old term. The fence refuses that write, and the process sees
 * StaleTermError carrying the new term (where the backend reports it), while the new leader's
 * first write stays. Both processes (test/support/fenced-leader.ts) campaign for one lease in an
 * SQLite file and write one resource (test/support/fenced-resources.ts: an SQLite or PostgreSQL
 * row, a DynamoDB item, a GCS, S3 or Azure object, a route behind the HTTP fence, each on its real
 * server); the order of events is read from their own output on CLOCK_MONOTONIC.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { Storage } from "@google-cloud/storage";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { reportsHandler } from "../examples/fencing/http.js";
import { createTestBucket } from "./servers/versitygw.server.js";
import { createLeaseTable, dynamoClient, testEndpoint } from "./support/dynamo-server.js";
import { type ResourceKind, type ResourceSpec, readResource } from "./support/fenced-resources.js";

const LEASE_MS = 1000;
const script = join(import.meta.dirname, "support", "fenced-leader.ts");
const dir = mkdtempSync(join(tmpdir(), "leasehold-fencing-procs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** PostgreSQL tables the cases made (the test server is shared by the run). */
const pgTables: string[] = [];
afterAll(async () => {
  if (pgTables.length === 0) return;
  const client = new pg.Client({ connectionString: process.env.POSTGRES_URL! });
  await client.connect();
  await client.query(`DROP TABLE IF EXISTS ${pgTables.map((t) => `"${t}"`).join(", ")}`);
  await client.end();
});

interface Line {
  event: string;
  identity: string;
  mono: string;
  term?: number;
  seenTerm?: number;
  signalAborted?: boolean;
}

interface Leader {
  child: ChildProcess;
  lines: Line[];
  /** Resolves with the first line of `event`. */
  next(event: string): Promise<Line>;
  exited: Promise<number | null>;
}

const running = new Set<ChildProcess>();
const servers: Server[] = [];
afterEach(async () => {
  // SIGKILL reaches a stopped process too: nothing is left behind when a test fails.
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  running.clear();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

function start(mode: "pause" | "once", identity: string, leaseDb: string, resource: ResourceSpec): Leader {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", script, mode, leaseDb, JSON.stringify(resource), identity, String(LEASE_MS)],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  running.add(child);
  const lines: Line[] = [];
  const waiters: Array<{ event: string; resolve: (line: Line) => void }> = [];
  let buffered = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const line = JSON.parse(buffered.slice(0, end)) as Line;
      buffered = buffered.slice(end + 1);
      lines.push(line);
      for (const w of waiters.filter((w) => w.event === line.event)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const next = (event: string) =>
    new Promise<Line>((resolve, reject) => {
      const seen = lines.find((l) => l.event === event);
      if (seen) return resolve(seen);
      waiters.push({ event, resolve });
      void exited.then((code) => reject(new Error(`${identity} exited (${code}) before "${event}"`)));
    });
  return { child, lines, next, exited };
}

const mono = (line: Line) => BigInt(line.mono);

const unique = (base: string) => `${base}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

/** A fresh resource of `kind` on its test server, and what the HTTP service saved (for "http"). */
async function prepare(kind: ResourceKind): Promise<{ spec: ResourceSpec; saved?: Map<string, string[]> }> {
  switch (kind) {
    case "sqlite": {
      const path = join(dir, `${unique("data")}.db`);
      const data = new Database(path);
      data.pragma("journal_mode = WAL");
      data.exec("CREATE TABLE reports (id TEXT PRIMARY KEY, body TEXT NOT NULL, term INTEGER NOT NULL)");
      data.close();
      return { spec: { kind, path } };
    }
    case "postgres": {
      const url = process.env.POSTGRES_URL!;
      const table = `fenced_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`CREATE TABLE "${table}" (id text PRIMARY KEY, body text NOT NULL, term bigint NOT NULL)`);
      await client.end();
      pgTables.push(table);
      return { spec: { kind, url, table } };
    }
    case "dynamodb": {
      const table = await createLeaseTable(dynamoClient(testEndpoint()));
      return { spec: { kind, endpoint: testEndpoint(), table, id: "daily" } };
    }
    case "gcs": {
      const endpoint = process.env.GCS_ENDPOINT!;
      const bucket = unique("fenced");
      await new Storage({ apiEndpoint: endpoint, projectId: "leasehold-test" }).createBucket(bucket);
      return { spec: { kind, endpoint, bucket, name: "reports/daily" } };
    }
    case "s3": {
      const endpoint = process.env.S3_ENDPOINT!;
      return { spec: { kind, endpoint, bucket: await createTestBucket(endpoint, "fenced"), key: "reports/daily" } };
    }
    case "azure-blob": {
      const connectionString = process.env.AZURE_BLOB_CONNECTION_STRING!;
      const container = unique("fenced");
      await BlobServiceClient.fromConnectionString(connectionString).getContainerClient(container).create();
      return { spec: { kind, connectionString, container, blob: "reports/daily" } };
    }
    case "http": {
      const saved = new Map<string, string[]>();
      const server = createServer(
        reportsHandler(async (id, body) => {
          saved.set(id, [...(saved.get(id) ?? []), body]);
        }),
      ).listen(0, "127.0.0.1");
      servers.push(server);
      await new Promise((resolve) => server.once("listening", resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      return { spec: { kind, url, id: "daily", lease: "fencing/daily-report" }, saved };
    }
  }
}

/** Where the backend does not return the resource's term with a refusal (dynalite omits ALL_OLD's item). */
const seenTermUnknown = new Set<ResourceKind>(["dynamodb"]);

describe("a leader SIGSTOPped between its check and its write is refused by the fence when it wakes", () => {
  for (const kind of ["sqlite", "postgres", "dynamodb", "gcs", "s3", "azure-blob", "http"] as const) {
    // Two tsx processes per case: seconds each to start on busy cores (tens of seconds at a load
    // average of 10 on 2 cores, with every other test file running beside it).
    it(kind, { timeout: 150_000 }, async () => {
      const leaseDb = join(dir, `${unique("lease")}.db`);
      const { spec, saved } = await prepare(kind);

      const a = start("pause", "a", leaseDb, spec);
      const checked = await a.next("checked");
      expect(checked.term).toBe(1);
      a.child.kill("SIGSTOP");

      // b takes over once a's lease has run out on b's own clock, writes with its term, and exits.
      const b = start("once", "b", leaseDb, spec);
      expect(await b.exited).toBe(0);
      const bWrote = b.lines.find((l) => l.event === "wrote");
      expect(bWrote?.term).toBe(2);

      // a wakes up and, without checking again, writes with the term it was given.
      a.child.stdin?.write("go\n");
      a.child.kill("SIGCONT");
      const refused = await a.next("refused");
      expect(await a.exited).toBe(0);

      expect(refused).toMatchObject({ term: 1, ...(seenTermUnknown.has(kind) ? {} : { seenTerm: 2 }) });
      expect(mono(refused)).toBeGreaterThan(mono(bWrote!));
      // Nothing of a's term landed after b's first write: a wrote exactly once, before its pause.
      expect(a.lines.filter((l) => l.event === "wrote").map((l) => l.term)).toEqual([1]);
      expect(a.lines.filter((l) => l.event === "wrote").every((l) => mono(l) < mono(bWrote!))).toBe(true);
      // a's elector learns it lost the lease too (the watchdog fires on wake): it stops its term's work.
      const deposed = a.lines.find((l) => l.event === "deposed");
      expect(deposed).toMatchObject({ term: 1 });
      expect(a.lines.find((l) => l.event === "stopped")).toMatchObject({ term: 1 });
      const held = await readResource(spec, saved);
      expect(held.body).toBe("by b (first)");
      if (kind === "http") expect(saved?.get("daily")).toEqual(["by a (first)", "by b (first)"]);
      else expect(held.term).toBe(2);
    });
  }
});
