/**
 * One OS process holding a session with many bound leases (test/bound-processes.test.ts), on an
 * SQLite file shared with the other process. It prints one JSON line per event with `mono`,
 * CLOCK_MONOTONIC in nanoseconds (process.hrtime on Linux: one timeline for every process on the
 * machine). Every 20 ms it "acts" for each lease it leads, right after `stillLeader()` said yes, and
 * prints the leases and terms it acted under: the test checks those against the other process's.
 *
 * argv: <db> <identity> <leases> <leaseMs>. Stops (releasing nothing) on "stop" on stdin.
 */

import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { openSession } from "../../src/bound/session.js";
import type { ElectedEvent } from "../../src/leader/elector.js";

const [db, identity, count, leaseMs] = process.argv.slice(2) as [string, string, string, string];
const print = (event: string, fields: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ event, identity, mono: process.hrtime.bigint().toString(), ...fields })}\n`);

const store = new SqliteStore({ path: db });
const session = openSession({ store, name: `_sessions/${identity}`, identity, leaseMs: Number(leaseMs) });
session.on("established", ({ term }) => print("session", { term }));
session.on("lost", ({ term, reason }) => print("session-lost", { term, reason }));
const held = new Map<number, ElectedEvent>();
for (let i = 0; i < Number(count); i++) {
  const elector = session.elector({ name: `jobs/lease-${i}` });
  elector.on("elected", (e) => {
    held.set(i, e);
    print("elected", { lease: i, term: e.term });
  });
  elector.on("deposed", (e) => {
    held.delete(i);
    print("deposed", { lease: i, term: e.term, reason: e.reason });
  });
  elector.start();
}
const tick = setInterval(() => {
  const acted: Array<[number, number]> = [];
  for (const [i, e] of held) if (e.stillLeader()) acted.push([i, e.term]);
  if (acted.length > 0) print("act", { acted });
}, 20);
process.stdin.on("data", (chunk: Buffer) => {
  if (!chunk.toString().includes("stop")) return;
  clearInterval(tick);
  void session.close({ release: false }).then(async () => {
    await store.close();
    print("stopped");
    process.exit(0);
  });
});
