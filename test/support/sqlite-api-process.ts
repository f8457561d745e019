/**
 * The API on SQLite in its own process, for a load generator that must not share its event loop
 * (bench/) and for the power-loss test's control:
 *
 *   node --import tsx test/support/sqlite-api-process.ts <db path> [normal | full-inline]
 *
 * prints `{"url": ...}` on one line, then serves until SIGTERM or until its stdin closes (the
 * parent went away). With no second argument the store is the one users get (FULL, group commit on
 * the writer thread); "normal" is the old store (synchronous=NORMAL, each write committed alone on
 * the server's thread), "full-inline" that store with FULL (the SqliteBaseline settings).
 */

import type { SqliteBaseline } from "../../src/backends/sqlite/backend.js";
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { serve } from "../../src/runtime/node.js";

const BASELINES: Record<string, SqliteBaseline> = {
  normal: { synchronous: "NORMAL", inline: true },
  "full-inline": { synchronous: "FULL", inline: true },
};

const [path, baseline = ""] = process.argv.slice(2);
if (!path || (baseline !== "" && !(baseline in BASELINES))) {
  throw new Error("usage: sqlite-api-process.ts <sqlite path> [normal | full-inline]");
}
const store = new SqliteStore({ path }, BASELINES[baseline] ?? {});
const server = await serve({ store, host: "127.0.0.1", port: 0, insecureNoAuth: true });
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);

let closing = false;
const shutdown = async () => {
  if (closing) return;
  closing = true;
  await server.close();
  await store.close();
  process.exit(0);
};
process.once("SIGTERM", () => void shutdown());
process.stdin.on("close", () => void shutdown());
process.stdin.resume();
