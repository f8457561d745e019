/**
 * One candidate for one lease in its own OS process, on an SQLite file shared with another such
 * process (test/sqlite-push.test.ts): a default `Elector` ("plain") or a lease bound to a process
 * session ("bound"). Its follower polls once a minute and the lease lasts 30 s, so within a test
 * only the store's push (src/backends/sqlite/watch.ts) can tell it of a release or a hand-over.
 * Prints one JSON line per event with `mono`, CLOCK_MONOTONIC in nanoseconds (process.hrtime on
 * Linux: one timeline for every process on the machine).
 *
 * argv: <db> <identity> <plain|bound> <lease>. On "stop" on stdin: prints "stopping", stops
 * gracefully (a release, or a hand-over to a registered successor), prints "stopped" and exits.
 */
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { openSession } from "../../src/bound/session.js";
import { Elector } from "../../src/leader/elector.js";

const [db, identity, mode, lease] = process.argv.slice(2) as [string, string, "plain" | "bound", string];
const print = (event: string, fields: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ event, identity, mono: process.hrtime.bigint().toString(), ...fields })}\n`);

const timing = { leaseMs: 30_000, renewMs: 5_000, pollMs: 60_000 };
const store = new SqliteStore({ path: db });
const session =
  mode === "bound" ? openSession({ store, name: `_sessions/${identity}`, identity, ...timing }) : undefined;
const elector = session ? session.elector({ name: lease }) : new Elector({ store, name: lease, identity, ...timing });
elector.on("elected", ({ term }) => print("elected", { term }));
elector.on("deposed", ({ term, reason }) => print("deposed", { term, reason }));
elector.on("leader", (seen) => print("leader", { holder: seen?.holder ?? null }));
elector.start();
print("started");
process.stdin.on("data", (chunk: Buffer) => {
  if (!chunk.toString().includes("stop")) return;
  print("stopping");
  void (async () => {
    await elector.stop({ release: true });
    print("stopped");
    await session?.close({ release: false });
    await store.close();
    process.exit(0);
  })();
});
