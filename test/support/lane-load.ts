/**
 * A process full of electors whose event loop is periodically blocked, for the renewals-first test
 * (docs/design.md §4). Usage:
 *   lane-load.ts <db> <lane: on|off> <leases> <candidates> <leaseMs> <seconds> [blockMinMs] [blockMaxMs]
 * Runs leases x candidates electors on one SQLite file (each lease's first campaigner leads, the
 * rest follow and poll), waits until every lease has a leader, then for <seconds> blocks its own
 * event loop for blockMin..blockMax ms (busy-wait) once a second. Prints one JSON line a second and
 * a last line with `summary: true`: terms lost (a leader deposed other than by its own stop), terms
 * won, renewals, store reads and writes, and the lane's counters. With `off` the electors get
 * `openLane`: every follower call goes out at once, as before the lane.
 */

import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { type Lane, LoadLane, openLane } from "../../src/elector/load-lane.js";
import { Elector } from "../../src/leader/elector.js";
import type { LeaseRecord, LeaseStore, Revision } from "../../src/lease.js";

const [db, laneArg, leasesArg, candidatesArg, leaseMsArg, secondsArg, blockMinArg, blockMaxArg] = process.argv.slice(2);
const leases = Number(leasesArg);
const candidates = Number(candidatesArg);
const leaseMs = Number(leaseMsArg);
const seconds = Number(secondsArg);
const blockMin = Number(blockMinArg ?? 200);
const blockMax = Number(blockMaxArg ?? 400);

const sqlite = new SqliteStore({ path: db!, busyTimeoutMs: 10_000 });
const calls = { reads: 0, writes: 0 };
// Counts what reaches the store; no push, so followers learn only by polling.
const store: LeaseStore = {
  get: (name) => {
    calls.reads++;
    return sqlite.get(name);
  },
  put: (next: LeaseRecord, expected: Revision | null) => {
    calls.writes++;
    return sqlite.put(next, expected);
  },
};
const lane: Lane = laneArg === "on" ? new LoadLane() : openLane;

const counts = { lost: 0, won: 0, renewals: 0, renewFailures: 0 };
let counting = false;
const losses: string[] = [];
const electors: Elector[] = [];
for (let l = 0; l < leases; l++) {
  for (let c = 0; c < candidates; c++) {
    const e = new Elector({ store, lane, name: `load/l${l}`, identity: `l${l}-c${c}`, leaseMs });
    e.on("elected", () => {
      if (counting) counts.won++;
    });
    e.on("renewed", () => {
      if (counting) counts.renewals++;
    });
    e.on("error", ({ during }) => {
      if (counting && during === "renew") counts.renewFailures++;
    });
    e.on("deposed", ({ term, reason }) => {
      // A term lost: it ran out (expired) or was taken over (conflict), not ended by its own stop.
      if (!counting || (reason !== "expired" && reason !== "conflict")) return;
      counts.lost++;
      if (losses.length < 20) losses.push(`${e.name}#${term}:${reason}`);
    });
    electors.push(e);
  }
}
for (const e of electors) e.start();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const leaders = () => electors.filter((e) => e.current.isLeader).length;
const started = performance.now();
while (leaders() < leases) {
  if (performance.now() - started > 120_000) throw new Error(`only ${leaders()} of ${leases} leases have a leader`);
  await sleep(100);
}
const before = { ...calls };
counting = true;
const stats = () => (lane instanceof LoadLane ? lane.stats() : undefined);
const report = (extra: Record<string, unknown>) =>
  console.log(
    JSON.stringify({
      ...extra,
      ...counts,
      leaders: leaders(),
      reads: calls.reads - before.reads,
      writes: calls.writes - before.writes,
      lane: stats(),
    }),
  );

const blockedMs: number[] = [];
const endAt = performance.now() + seconds * 1000;
for (let s = 1; performance.now() < endAt; s++) {
  await sleep(1000 - (blockMax + blockMin) / 2);
  // The event loop stalls: synchronous work, as a big JSON parse or a sync compression would.
  const block = blockMin + Math.random() * (blockMax - blockMin);
  const until = performance.now() + block;
  while (performance.now() < until) {
    // busy
  }
  blockedMs.push(Math.round(block));
  report({ second: s });
}
counting = false;
report({ summary: true, losses, blocks: blockedMs.length });
await Promise.all(electors.map((e) => e.stop({ release: false })));
await sqlite.close();
