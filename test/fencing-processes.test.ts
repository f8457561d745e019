/**
 * docs/fencing.md's first claim, with real processes and a real SIGSTOP, for every fence: a leader
 * paused between its leadership check and its write wakes up after its lease has passed to another
 * process, and writes with its old term. The fence refuses that write, and the process sees
 * StaleTermError carrying the new term (where the backend reports it), while the new leader's
 * first write stays. Both processes (test/support/fenced-leader.ts) campaign for one lease in an
 * SQLite file and write one resource (test/support/fenced-resources.ts: an SQLite or PostgreSQL
 * row, a DynamoDB item, a GCS, S3 or Azure object, a route behind the HTTP fence, each on its real
 * server); the order of events is read from their own output on CLOCK_MONOTONIC.
 *
 * Each case keeps a trace: the test's own steps and every line of both processes (their stderr's
 * tail too), on that one clock. A case that fails, or does not finish a few seconds before its
 * timeout, fails with the trace in its message: the last step each process and the test reached.
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
// Two tsx processes per case: seconds each to start on busy cores (tens of seconds at a load
// average of 10 on 2 cores, with every other test file running beside it).
const TIMEOUT_MS = 150_000;
/** A case still running this long fails with its trace, before vitest's timeout fails it without. */
const DEADLINE_MS = TIMEOUT_MS - 5_000;
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

/** One case's steps, the test's and its processes', for the message of a failure. */
class Trace {
  private readonly began = process.hrtime.bigint();
  private readonly entries: Array<{ mono: bigint; who: string; what: string }> = [];
  private readonly stderr = new Map<string, string>();
  /** Every process started, so one that printed nothing yet is named too. */
  private readonly processes: string[] = [];

  /** A step of the test's own, stamped now. */
  step(what: string): void {
    this.entries.push({ mono: process.hrtime.bigint(), who: "test", what });
  }

  /** A process started (its lines follow). */
  started(who: string, what: string): void {
    this.processes.push(who);
    this.step(what);
  }

  /** A line a process printed, stamped by that process. */
  line(line: Line): void {
    const { event, identity, mono, ...fields } = line;
    const more = Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : "";
    this.entries.push({ mono: BigInt(mono), who: identity, what: `${event}${more}` });
  }

  /** What a process wrote that was not a JSON line: stamped when it arrived. */
  output(who: string, text: string): void {
    this.entries.push({ mono: process.hrtime.bigint(), who, what: `(not JSON) ${text}` });
  }

  stderrOf(who: string, chunk: string): void {
    this.stderr.set(who, ((this.stderr.get(who) ?? "") + chunk).slice(-2000));
  }

  /** The last step of each, then the last 40 steps of all in order, then each process's stderr tail. */
  report(): string {
    const sorted = [...this.entries].sort((x, y) => (x.mono < y.mono ? -1 : x.mono > y.mono ? 1 : 0));
    const at = (mono: bigint) => `+${(Number(mono - this.began) / 1e9).toFixed(3)} s`;
    const last = new Map(sorted.map((e) => [e.who, e]));
    const lastOf = (who: string) => {
      const e = last.get(who);
      return e ? `${who}: "${e.what}" at ${at(e.mono)}` : `${who}: no line yet`;
    };
    const out = [
      `trace (seconds since the case began, CLOCK_MONOTONIC), now ${at(process.hrtime.bigint())}:`,
      `last step of each: ${["test", ...this.processes].map(lastOf).join("; ")}`,
      ...sorted.slice(-40).map((e) => `  ${at(e.mono).padStart(11)}  ${e.who.padEnd(4)}  ${e.what}`),
    ];
    for (const [who, text] of this.stderr) out.push(`stderr of ${who} (tail):`, text.trimEnd());
    return out.join("\n");
  }
}

/**
 * Runs a case with `trace`; if it fails, or is still running after `ms`, it fails with the trace
 * appended to its message.
 */
async function traced(trace: Trace, ms: number, body: () => Promise<void>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the case did not finish within ${ms / 1000} s`)), ms);
  });
  try {
    await Promise.race([body(), deadline]);
  } catch (error) {
    if (error instanceof Error) error.message += `\n\n${trace.report()}`;
    throw error;
  } finally {
    clearTimeout(timer);
  }
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

function start(
  trace: Trace,
  mode: "pause" | "once",
  identity: string,
  leaseDb: string,
  resource: ResourceSpec,
): Leader {
  trace.started(identity, `start ${identity} (${mode})`);
  const child = spawn(
    process.execPath,
    ["--import", "tsx", script, mode, leaseDb, JSON.stringify(resource), identity, String(LEASE_MS)],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  running.add(child);
  child.stderr?.on("data", (chunk: Buffer) => {
    process.stderr.write(chunk);
    trace.stderrOf(identity, chunk.toString());
  });
  const lines: Line[] = [];
  const waiters: Array<{ event: string; resolve: (line: Line) => void }> = [];
  let buffered = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const text = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      let line: Line;
      try {
        line = JSON.parse(text) as Line;
      } catch {
        trace.output(identity, text);
        continue;
      }
      trace.line(line);
      lines.push(line);
      for (const w of waiters.filter((w) => w.event === line.event)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code, signal) => {
      trace.step(`${identity} exited (${code ?? signal})`);
      resolve(code);
    }),
  );
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
    it(kind, { timeout: TIMEOUT_MS }, async () => {
      const trace = new Trace();
      await traced(trace, DEADLINE_MS, () => sigstoppedLeader(kind, trace));
    });
  }
});

async function sigstoppedLeader(kind: ResourceKind, trace: Trace): Promise<void> {
  const leaseDb = join(dir, `${unique("lease")}.db`);
  trace.step(`prepare the ${kind} resource`);
  const { spec, saved } = await prepare(kind);

  const a = start(trace, "pause", "a", leaseDb, spec);
  trace.step('wait for a\'s "checked"');
  const checked = await a.next("checked");
  expect(checked.term).toBe(1);
  trace.step("SIGSTOP a");
  a.child.kill("SIGSTOP");

  // b takes over once a's lease has run out on b's own clock, writes with its term, and exits.
  const b = start(trace, "once", "b", leaseDb, spec);
  trace.step("wait for b to exit");
  expect(await b.exited).toBe(0);
  const bWrote = b.lines.find((l) => l.event === "wrote");
  expect(bWrote?.term).toBe(2);

  // a wakes up and, without checking again, writes with the term it was given.
  trace.step('"go" to a\'s stdin, SIGCONT a');
  a.child.stdin?.write("go\n");
  a.child.kill("SIGCONT");
  trace.step('wait for a\'s "refused"');
  const refused = await a.next("refused");
  trace.step("wait for a to exit");
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
  trace.step("read the resource");
  const held = await readResource(spec, saved);
  expect(held.body).toBe("by b (first)");
  if (kind === "http") expect(saved?.get("daily")).toEqual(["by a (first)", "by b (first)"]);
  else expect(held.term).toBe(2);
}
