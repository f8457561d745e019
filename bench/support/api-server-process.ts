/**
 * The API on SQLite in its own process, so a load generator in the parent does not share its event
 * loop: `node --import tsx bench/support/api-server-process.ts <db path>` prints `{"url": ...}` on
 * one line, then serves until SIGTERM or until its stdin closes (the parent went away).
 */
import { serve } from "../../src/runtime/node.js";
import { SqliteStore } from "../../src/stores/sqlite.js";

const path = process.argv[2];
if (!path) throw new Error("usage: api-server-process.ts <sqlite path>");
const store = new SqliteStore({ path });
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
