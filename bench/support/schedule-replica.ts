/**
 * One replica of a leasehold scheduled job for bench/schedule.bench.ts: `schedule()` firing every
 * second on a shared store, its wall clock shifted by skewMs in process (the injected clock), its
 * work writing the fire-writer lines (test/support/fire-writer.ts) to the shared log. Missed fires
 * it settles are printed as JSON lines on stdout.
 *   node --import tsx bench/support/schedule-replica.ts <store url> <name> <identity> <skewMs> <atMostMs> <workMs> <log>
 */
import { appendFileSync } from "node:fs";
import { type Clock, systemClock } from "../../src/clock.js";
import { openStore } from "../../src/open-store.js";
import { schedule } from "../../src/schedule/index.js";

const [url, name, identity, skew, atMost, work, log] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
];
const store = await openStore(url, { env: process.env });
const clock: Clock = { ...systemClock, wallNow: () => Date.now() + Number(skew) };
const line = (term: number, fire: string, event: string) =>
  appendFileSync(
    log,
    `${term} ${process.hrtime.bigint()} ${identity} ${fire} ${process.pid} ${process.ppid} ${event}\n`,
  );

const job = schedule({
  store,
  name,
  cron: "* * * * * *",
  identity,
  lockAtMostFor: Number(atMost),
  clock,
  fn: async (ctx) => {
    const fire = ctx.fire.toISOString();
    // Each line is a side effect: written only while the run's window is open, checked right
    // before (a replica paused past its window by SIGSTOP sees false on waking).
    if (!ctx.stillLeader()) return;
    line(ctx.term, fire, "start");
    const end = performance.now() + Number(work);
    while (performance.now() < end) {
      await clock.sleep(Math.min(20, end - performance.now()), ctx.signal);
      if (!ctx.stillLeader()) return;
      line(ctx.term, fire, "tick");
    }
    if (ctx.stillLeader()) line(ctx.term, fire, "end");
  },
});
job.on("missed", ({ fires, reason }) => {
  process.stdout.write(`${JSON.stringify({ missed: fires.map((f) => f.toISOString()), reason })}\n`);
});
process.stdout.write("ready\n");
