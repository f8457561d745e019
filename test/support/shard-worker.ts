/**
 * One member of a sharded group as an OS process, for test/sharding/processes.test.ts.
 *
 *   node --import tsx shard-worker.ts <sqlite|http> <db path | API url> <group> <member id> <log> <leaseMs> <buckets>
 *
 * - `sqlite`: `runSharded` over a `SqliteStore` on the shared file (the library member).
 * - `http`: a remote member of the API's sharding routes, written as an adapter in another language
 *   would be (docs/sharding.md, "Over HTTP"): it notes its monotonic clock before each heartbeat,
 *   works on `held` until `sentAt + leaseMs - safetyMs`, stops a bucket asked for and confirms it.
 *   Its bearer token, if the API needs one, is `LEASEHOLD_TOKEN` (a member-scoped token will do).
 *
 * Every WORK_MS, for each bucket it works on, it takes `process.hrtime.bigint()` (CLOCK_MONOTONIC,
 * one clock for every process on the machine), then checks that it still holds the bucket at that
 * instant, and only then appends "<ns> <bucket> <term> <member> <pid>" to its log: the stamp is
 * taken before the check, so a process paused between the two never writes a stamp from after its
 * window. On stdout, one JSON line whenever the set of buckets it works on changes:
 * `{"held":[...],"at":"<ns>"}` (the first one, empty, says it is ready).
 */
import { closeSync, openSync, writeSync } from "node:fs";
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { isLeaseholdApiError } from "../../src/http/api-error.js";
import { LeaseholdClient } from "../../src/http/client.js";
import { runSharded } from "../../src/sharding/run-sharded.js";

const [mode, target, group, member, logPath, leaseArg, bucketsArg] = process.argv.slice(2);
if (!mode || !target || !group || !member || !logPath || !leaseArg || !bucketsArg) {
  throw new Error("usage: shard-worker <sqlite|http> <db|url> <group> <member> <log> <leaseMs> <buckets>");
}
const leaseMs = Number(leaseArg);
const buckets = Number(bucketsArg);
const WORK_MS = 20;

const log = openSync(logPath, "a");
const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

/** What this process works on: bucket -> term, and whether it still holds it at a given instant. */
interface Tenure {
  term: number;
  holds: (atMs: number) => boolean;
}
const tenures = new Map<number, Tenure>();

let lastPrinted = "";
function printHeld(): void {
  const held = [...tenures.keys()].sort((a, b) => a - b);
  const key = held.join(",");
  if (key === lastPrinted) return;
  lastPrinted = key;
  process.stdout.write(`${JSON.stringify({ held, at: String(process.hrtime.bigint()) })}\n`);
}

setInterval(() => {
  for (const [bucket, t] of tenures) {
    const at = process.hrtime.bigint();
    if (!t.holds(Number(at) / 1e6)) continue;
    writeSync(log, `${at} ${bucket} ${t.term} ${member} ${process.pid}\n`);
  }
}, WORK_MS);

process.stdout.write(`${JSON.stringify({ held: [], at: String(process.hrtime.bigint()) })}\n`);
if (mode === "sqlite") await library(target);
else if (mode === "http") await remote(target);
else throw new Error(`unknown mode ${mode}`);
closeSync(log);

/** The library member: runSharded, a tenure per fn call, ended the instant its signal aborts. */
async function library(db: string): Promise<void> {
  const store = new SqliteStore({ path: db });
  await runSharded(
    {
      store,
      group: group!,
      buckets,
      identity: member!,
      leaseMs,
      onElector: (elector) => {
        elector.on("revoked", ({ bucket }) => {
          tenures.delete(bucket);
          printHeld();
        });
      },
    },
    async ({ bucket, term, signal, stillLeader }) => {
      if (signal.aborted) return;
      const tenure: Tenure = { term, holds: () => stillLeader() };
      tenures.set(bucket, tenure);
      printHeld();
      await new Promise<void>((resolve) => {
        signal.addEventListener(
          "abort",
          () => {
            if (tenures.get(bucket) === tenure) tenures.delete(bucket);
            printHeld();
            resolve();
          },
          { once: true },
        );
      });
    },
  );
}

/**
 * The remote member: heartbeats, its own deadline, hand-offs stopped then confirmed, by the rules of
 * docs/sharding.md ("What a remote member must do"): it names its session only while that
 * session's window is open at send time, and then waits for the answer no longer than the window;
 * once the window has closed it starts the next session, naming the one it worked under (`ended`),
 * so whatever it stopped comes back at new terms. An answer that arrives after it could be acted
 * on is not.
 */
async function remote(baseUrl: string): Promise<void> {
  const safetyMs = Math.floor(leaseMs / 10);
  const renewMs = Math.floor(leaseMs / 3);
  const retryMs = Math.floor(leaseMs / 7.5);
  const token = process.env.LEASEHOLD_TOKEN;
  const client = new LeaseholdClient({
    baseUrl,
    retries: 0,
    timeoutMs: leaseMs - safetyMs,
    ...(token ? { token } : {}),
  });
  const instance = crypto.randomUUID();
  /** Per bucket, the highest term whose work this process stopped: never started again. */
  const ended = new Map<number, number>();
  /** The session whose window is open (`deadline`), if any. */
  let session: number | undefined;
  /** The newest session this process worked under (sent as `ended` when it starts the next). */
  let worked = 0;
  let deadline = 0;
  let deadlineTimer: NodeJS.Timeout | undefined;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const stop = (bucket: number) => {
    const t = tenures.get(bucket);
    if (!t) return;
    tenures.delete(bucket);
    ended.set(bucket, Math.max(ended.get(bucket) ?? 0, t.term));
  };
  const stopAll = () => {
    for (const bucket of [...tenures.keys()]) stop(bucket);
    printHeld();
  };
  const holds = (atMs: number) => atMs < deadline;

  for (;;) {
    const sentAt = monotonicMs();
    const renewing = session !== undefined && sentAt < deadline;
    if (!renewing) {
      stopAll(); // the window closed (the watchdog may not have run yet): nothing runs under it
      session = undefined;
    }
    // The answer is acted on only before this instant: a renewal's, the open window's end; a
    // start's, the window it would grant.
    const usableUntil = renewing ? deadline : sentAt + leaseMs - safetyMs;
    let answer: Awaited<ReturnType<LeaseholdClient["heartbeat"]>>;
    try {
      answer = await client.heartbeat(
        group!,
        member!,
        { instance, leaseMs, buckets, ...(renewing ? { session } : worked > 0 ? { ended: worked } : {}) },
        AbortSignal.timeout(Math.max(1, Math.ceil(usableUntil - sentAt))),
      );
    } catch (error) {
      // The deadline stays where the last successful heartbeat put it.
      if (isLeaseholdApiError(error) && error.status === 409) {
        // session-ended, member-in-use: whatever this process held is over.
        stopAll();
        session = undefined;
      }
      await sleep(retryMs);
      continue;
    }
    if (monotonicMs() >= usableUntil) {
      stopAll(); // an answer that came too late grants nothing
      continue;
    }
    if (answer.session !== session) stopAll();
    session = answer.session;
    worked = Math.max(worked, session);
    deadline = sentAt + leaseMs - safetyMs;
    clearTimeout(deadlineTimer);
    deadlineTimer = setTimeout(() => {
      if (monotonicMs() >= deadline) stopAll();
    }, deadline - monotonicMs());
    const held = new Map(answer.held.map((h) => [h.bucket, h.term]));
    for (const [bucket, t] of tenures) if (held.get(bucket) !== t.term) stop(bucket);
    /** Asked for, or listed at a term this process stopped (a confirmation that was lost): confirm. */
    const confirm = answer.handoffs.map((h) => ({ bucket: h.bucket, term: h.term }));
    for (const [bucket, term] of held) {
      if (tenures.has(bucket)) continue;
      if (term > (ended.get(bucket) ?? 0)) tenures.set(bucket, { term, holds });
      else confirm.push({ bucket, term });
    }
    for (const h of answer.handoffs) stop(h.bucket);
    printHeld();
    // The work stopped synchronously above: confirm each, all at once. The next heartbeat waits for
    // them only until it is due: confirmations must never hold up a renewal (a member confirming a
    // few hand-offs one after another on a loaded machine let its window close).
    const confirmed = Promise.all(
      confirm.map((c) => {
        ended.set(c.bucket, Math.max(ended.get(c.bucket) ?? 0, c.term));
        return client
          .confirmHandoff(group!, member!, { instance, session: session!, bucket: c.bucket, term: c.term })
          .catch(() => undefined); // refused or failed: the next heartbeat asks again or shows where it went
      }),
    );
    const settled = answer.settled && confirm.length === 0;
    await Promise.race([confirmed, sleep(Math.max(0, sentAt + renewMs - monotonicMs()))]);
    await sleep(Math.max(0, sentAt + (settled ? renewMs : retryMs) - monotonicMs()));
  }
}
