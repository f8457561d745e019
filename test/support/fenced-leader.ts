/**
 * A leader process for fencing-processes.test.ts: campaigns for one lease in an SQLite file
 * (runAsLeader) and writes one fenced resource through its kind's helper (an SQLite or PostgreSQL
 * row, a DynamoDB item, a GCS, S3 or Azure object, a route behind the HTTP fence:
 * test/support/fenced-resources.ts, named by a JSON spec). It prints one JSON line per step with
 * `mono`, CLOCK_MONOTONIC in nanoseconds (process.hrtime on Linux: one clock for every process on
 * the machine), so the test orders events across processes, and when a case hangs its failure
 * names the last step each process reached: started, ready (resource client made), campaigning,
 * elected, "write sent" / wrote (or "write failed"), checked (then waiting for the test's line),
 * continued (SIGCONT seen), go (the line read), refused, deposed, stopped, done; "failed" with the
 * error before a crash, and each elector error.
 *
 *   fenced-leader.ts <mode> <lease db> <resource spec (JSON)> <identity> <leaseMs>
 *
 * mode "pause": write once, check `signal`, print "checked", then wait for a line on stdin before
 *   writing again without checking: the test SIGSTOPs it there, as a pause can strike between any
 *   check and the write that follows. On StaleTermError it does what docs/fencing.md says: stop
 *   this term's work and wait for the elector to notice.
 * mode "once": write once and return (the lease is released).
 */
import { once } from "node:events";
import { createInterface } from "node:readline";
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { isStaleTermError, type StaleTermError } from "../../src/errors.js";
import { runAsLeader } from "../../src/leader/run-as-leader.js";
import { type ResourceSpec, writerFor } from "./fenced-resources.js";

const [mode, leaseDb, resource, identity, leaseMs] = process.argv.slice(2);
if (mode !== "pause" && mode !== "once") throw new Error(`unknown mode ${mode}`);

const log = (event: string, fields: Record<string, unknown> = {}) =>
  console.log(JSON.stringify({ event, identity, mono: process.hrtime.bigint().toString(), ...fields }));

log("started", { mode, pid: process.pid });
// The process cannot see its SIGSTOP, only the SIGCONT that ends it.
process.on("SIGCONT", () => log("continued"));
const failed = (error: unknown) => {
  log("failed", { message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  throw error;
};

const store = new SqliteStore({ path: leaseDb!, busyTimeoutMs: 10_000 });
const writeResource = await writerFor(JSON.parse(resource!) as ResourceSpec).catch(failed);
const stop = new AbortController();
const stdin = createInterface({ input: process.stdin });
log("ready");

/** The fenced write, each end of it logged: "write sent", then "wrote" or the error (rethrown). */
async function write(term: number, body: string): Promise<void> {
  log("write sent", { term, body });
  try {
    await writeResource(term, body);
  } catch (error) {
    log("write failed", { term, error: isStaleTermError(error) ? "StaleTermError" : String(error) });
    throw error;
  }
  log("wrote", { term });
}

log("campaigning");
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
      elector.on("error", ({ error, during }) => log("elector error", { during, error: String(error) }));
    },
  },
  async ({ term, signal }) => {
    if (stop.signal.aborted) return;
    await write(term, `by ${identity} (first)`);
    if (mode === "once") return stop.abort();
    if (signal.aborted) return stop.abort();
    log("checked", { term });
    await once(stdin, "line"); // SIGSTOPped here by the test
    log("go");
    try {
      await write(term, `by ${identity} (after the pause)`);
    } catch (error) {
      if (!isStaleTermError(error)) throw error;
      log("refused", { term, seenTerm: (error as StaleTermError).seenTerm, signalAborted: signal.aborted });
      if (!signal.aborted) await once(signal, "abort");
      log("stopped", { term });
    }
    stop.abort();
  },
).catch(failed);
stdin.close();
await store.close();
log("done");
process.exit(0); // SDK clients keep sockets open
