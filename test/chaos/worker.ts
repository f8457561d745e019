/**
 * One OS process of the multi-process chaos test (processes.test.ts): a real-time candidate on the
 * shared SQLite file. While leader it writes to a fenced "resource" table in the same file every
 * `writeEveryMs`, checking only its signal as an application would (a SIGSTOPped leader wakes and
 * tries once more: fencing must turn it away). Every election and loss goes to its own log as one
 * JSON line. SIGTERM stops it gracefully (release).
 *
 *   node --import tsx worker.ts <db> <lease> <identity> <log> <leaseMs> <renewMs> <writeEveryMs>
 */
import { appendFileSync } from "node:fs";
import Database from "better-sqlite3";
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { systemClock } from "../../src/clock.js";
import { runAsLeader } from "../../src/leader/run-as-leader.js";
import { FENCED_SCHEMA, type WorkerLogLine } from "./worker-log.js";

const [db, lease, identity, log, leaseMs, renewMs, writeEveryMs] = process.argv.slice(2);
if (!db || !lease || !identity || !log || !leaseMs || !renewMs || !writeEveryMs) {
  throw new Error("usage: worker.ts <db> <lease> <identity> <log> <leaseMs> <renewMs> <writeEveryMs>");
}

const store = new SqliteStore({ path: db, busyTimeoutMs: 2000 });
const resource = new Database(db, { timeout: 2000 });
resource.exec(FENCED_SCHEMA); // idempotent: the test creates it first, a standalone run needs it too
const current = resource.prepare<[], { term: number }>("SELECT term FROM fenced_resource WHERE id = 1");
const accept = resource.prepare<[number, string]>("UPDATE fenced_resource SET term = ?, writer = ? WHERE id = 1");
const record = resource.prepare<[number, string, number, number, number]>(
  "INSERT INTO fenced_log (term, writer, pid, wall, accepted) VALUES (?, ?, ?, ?, ?)",
);
/** The fencing rule, atomically: accept only a term at least the highest accepted one. */
const fencedWrite = resource.transaction((term: number) => {
  const accepted = term >= (current.get()?.term ?? 0);
  if (accepted) accept.run(term, identity);
  record.run(term, identity, process.pid, Date.now(), accepted ? 1 : 0);
});

const write = (line: Omit<WorkerLogLine, "identity" | "pid" | "wall">) =>
  appendFileSync(log, `${JSON.stringify({ ...line, identity, pid: process.pid, wall: Date.now() })}\n`);

const stop = new AbortController();
process.on("SIGTERM", () => stop.abort());

process.stdout.write("ready\n");
await runAsLeader(
  {
    store,
    name: lease,
    identity,
    leaseMs: Number(leaseMs),
    renewMs: Number(renewMs),
    retryMs: Math.round(Number(leaseMs) / 6),
    signal: stop.signal,
    onElector: (elector) => {
      elector.on("elected", ({ term, record }) => write({ event: "elected", term, acquiredAt: record.acquiredAt }));
      elector.on("deposed", ({ term, reason }) => write({ event: "deposed", term, reason }));
    },
  },
  async ({ term, signal }) => {
    while (!signal.aborted) {
      fencedWrite.immediate(term);
      await systemClock.sleep(Number(writeEveryMs), signal);
    }
  },
);
await store.close();
resource.close();
