/**
 * One candidate as an OS process for the network-fault tests (test/net/*.test.ts), reaching its
 * store through its own Toxiproxy proxy, so the test can cut it off alone.
 *
 *   node --import tsx net-candidate.ts <store URL> <mode> <member> <log> <leaseMs> [leases]
 *
 * - store URL: what openStore takes (dynamodb://, s3://, or http:// for the API through HttpStore);
 * - mode "elector": one `Elector` for lease `net/lease` (bucket 0 in the log);
 *   mode "bound": one process session with `leases` bound electors (`net/bound-<i>`, bucket i).
 *
 * The process-cluster protocol (test/support/process-cluster.ts): a JSON line on stdout whenever
 * the set of leases it works on changes (`{"held":[...],"at":"<ns>"}`, the first one empty), and
 * every 20 ms, per lease it leads, CLOCK_MONOTONIC taken first, then `stillLeader()`, and only
 * then "<ns> <lease> <term> <member> <pid>" appended to its log. Other events as JSON lines:
 * `{"event":"error","during":...}` (rate-limited), `{"event":"deposed","reason":...}`.
 */
import { closeSync, openSync, writeSync } from "node:fs";
import { openSession } from "../../src/bound/session.js";
import { type ElectedEvent, Elector } from "../../src/leader/elector.js";
import { openStore } from "../../src/open-store.js";

const [url, mode, member, logPath, leaseArg, leasesArg] = process.argv.slice(2);
if (!url || !mode || !member || !logPath || !leaseArg) {
  throw new Error("usage: net-candidate <store URL> <elector|bound> <member> <log> <leaseMs> [leases]");
}
const leaseMs = Number(leaseArg);
const store = await openStore(url, { env: process.env as Record<string, string> });
const log = openSync(logPath, "a");
const held = new Map<number, ElectedEvent>();

let printed = "";
const printHeld = () => {
  const list = [...held.keys()].sort((a, b) => a - b);
  if (list.join(",") === printed) return;
  printed = list.join(",");
  process.stdout.write(`${JSON.stringify({ held: list, at: String(process.hrtime.bigint()) })}\n`);
};
const event = (fields: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ ...fields, at: String(process.hrtime.bigint()) })}\n`);
let errors = 0;
const onError = (during: string, error: unknown) => {
  if (errors++ % 20 === 0) event({ event: "error", during, message: String((error as Error)?.message ?? error) });
};

process.stdout.write(`${JSON.stringify({ held: [], at: String(process.hrtime.bigint()) })}\n`);

/** What this process needs of an `Elector` or a bound elector. */
interface Candidate {
  on: Elector["on"];
  start(): void;
}

const watch = (bucket: number, elector: Candidate) => {
  elector.on("elected", (e) => {
    held.set(bucket, e);
    printHeld();
  });
  elector.on("deposed", ({ reason, term }) => {
    held.delete(bucket);
    event({ event: "deposed", lease: bucket, term, reason });
    printHeld();
  });
  elector.on("error", ({ error, during }) => onError(during, error));
  elector.start();
};

if (mode === "elector") {
  watch(0, new Elector({ store, name: "net/lease", identity: member, leaseMs }));
} else if (mode === "bound") {
  const session = openSession({ store, name: `net/_sessions/${member}`, identity: member, leaseMs });
  session.on("lost", ({ term, reason }) => event({ event: "session-lost", term, reason }));
  for (let i = 0; i < Number(leasesArg ?? 10); i++) watch(i, session.elector({ name: `net/bound-${i}` }));
} else {
  throw new Error(`unknown mode ${mode}`);
}

setInterval(() => {
  for (const [bucket, e] of held) {
    const at = process.hrtime.bigint();
    if (!e.stillLeader()) continue;
    writeSync(log, `${at} ${bucket} ${e.term} ${member} ${process.pid}\n`);
  }
}, 20);
process.on("exit", () => closeSync(log));
