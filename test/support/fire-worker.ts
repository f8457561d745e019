/**
 * One replica of a serverless-style job for the process tests: it reads fire times (ISO 8601, one
 * per line) from stdin, as deliveries of an at-least-once trigger, and hands each to `runFire` at
 * once, each call on its own (no memory shared between deliveries, as separate invocations). The
 * job writes "start", "tick" and "end" lines to the shared log (the fire-writer format, in process);
 * each delivery's result is one JSON line on stdout.
 * argv: STORE_URL NAME LOG IDENTITY WORK_MS
 */
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { openStore } from "../../src/open-store.js";
import { runFire } from "../../src/schedule/index.js";

const [url, name, log, identity, workMs] = process.argv.slice(2) as [string, string, string, string, string];
const store = await openStore(url, { env: process.env });
process.stderr.write("ready\n");

const line = (term: number, fire: string, event: string) =>
  appendFileSync(
    log,
    `${term} ${process.hrtime.bigint()} ${identity} ${fire} ${process.pid} ${process.ppid} ${event}\n`,
  );

for await (const input of createInterface({ input: process.stdin })) {
  const fire = input.trim();
  if (fire === "") continue;
  void runFire({
    store,
    name,
    fire,
    identity,
    lockAtMostFor: 5000,
    on: { missed: (m) => process.stderr.write(`missed ${m.fires.map((f) => f.toISOString()).join(" ")}\n`) },
    fn: async (ctx) => {
      line(ctx.term, fire, "start");
      const tick = setInterval(() => line(ctx.term, fire, "tick"), 20);
      await new Promise((r) => setTimeout(r, Number(workMs)));
      clearInterval(tick);
      line(ctx.term, fire, "end");
    },
  }).then(
    (result) => process.stdout.write(`${JSON.stringify({ fire, status: result.status })}\n`),
    (error: unknown) => process.stdout.write(`${JSON.stringify({ fire, error: String(error) })}\n`),
  );
}
