/**
 * A leader process for fencing-processes.test.ts: campaigns for one lease in an SQLite file
 * (runAsLeader) and writes the row "daily" of another SQLite file through `fencedUpdate`. It prints
 * one JSON line per event with `mono`, CLOCK_MONOTONIC in nanoseconds (process.hrtime on Linux:
 * one clock for every process on the machine), so the test orders events across processes.
 *
 *   fenced-leader.ts <mode> <lease db> <data db> <identity> <leaseMs>
 *
 * mode "pause": write once, check `signal`, print "checked", then wait for a line on stdin before
 *   writing again without checking: the test SIGSTOPs it there, as a pause can strike between any
 *   check and the write that follows. On StaleTermError it does what docs/fencing.md says: stop
 *   this term's work and wait for the elector to notice.
 * mode "once": write once and return (the lease is released).
 */
import { once } from "node:events";
import { createInterface } from "node:readline";
import Database from "better-sqlite3";
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { runAsLeader } from "../../src/elector/run-as-leader.js";
import { fencedUpdate, StaleTermError } from "../../src/fencing/sqlite.js";

const [mode, leaseDb, dataDb, identity, leaseMs] = process.argv.slice(2);
if (mode !== "pause" && mode !== "once") throw new Error(`unknown mode ${mode}`);

const log = (event: string, fields: Record<string, unknown> = {}) =>
  console.log(JSON.stringify({ event, identity, mono: process.hrtime.bigint().toString(), ...fields }));

const store = new SqliteStore({ path: leaseDb!, busyTimeoutMs: 10_000 });
const data = new Database(dataDb!);
data.pragma("busy_timeout = 10000");
const write = (term: number, body: string) =>
  fencedUpdate(data, { table: "reports", key: { id: "daily" }, set: { body }, term });
const stop = new AbortController();
const stdin = createInterface({ input: process.stdin });

await runAsLeader(
  {
    store,
    name: "fencing/daily-report",
    identity: identity!,
    leaseMs: Number(leaseMs),
    signal: stop.signal,
    onElector: (elector) => {
      elector.on("elected", ({ term }) => log("elected", { term }));
      elector.on("deposed", ({ term, reason }) => log("deposed", { term, reason }));
    },
  },
  async ({ term, signal }) => {
    if (stop.signal.aborted) return;
    write(term, `by ${identity} (first)`);
    log("wrote", { term });
    if (mode === "once") return stop.abort();
    if (signal.aborted) return stop.abort();
    log("checked", { term });
    await once(stdin, "line"); // SIGSTOPped here by the test
    try {
      write(term, `by ${identity} (after the pause)`);
      log("wrote", { term });
    } catch (error) {
      if (!(error instanceof StaleTermError)) throw error;
      log("refused", { term, seenTerm: error.seenTerm, signalAborted: signal.aborted });
      if (!signal.aborted) await once(signal, "abort");
      log("stopped", { term });
    }
    stop.abort();
  },
);
stdin.close();
data.close();
await store.close();
