/**
 * The API (src/runtime/node.ts `serve`, as `leasehold serve` runs it) on SQLite in its own process,
 * with one observation added and nothing changed: each store write is stamped on CLOCK_MONOTONIC
 * (process.hrtime, the clock every process on the machine shares) when the API calls the store and
 * when the store answers, and printed after the fact as one JSON line on stdout:
 *
 *   node --import tsx bench/support/timed-api-process.ts <db path>
 *   -> {"url":"http://127.0.0.1:PORT"} then {"writeId":"...","holder":...,"start":"<ns>","end":"<ns>"} per write
 *
 * For the handover benchmark's per-hop breakdown. Stops on SIGTERM or when stdin closes.
 */

import { SqliteStore } from "../../src/backends/sqlite/store.js";
import type { CallOptions, LeaseRecord, Revision, Stored } from "../../src/lease.js";
import { serve } from "../../src/runtime/node.js";
import { StoreWrapper } from "../../src/testkit/store-wrapper.js";

class StampedWrites extends StoreWrapper {
  override async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const start = process.hrtime.bigint();
    try {
      return await super.put(next, expected, options);
    } finally {
      const end = process.hrtime.bigint();
      // After the answer is on its way, so the stamp costs the write nothing.
      setImmediate(() =>
        process.stdout.write(
          `${JSON.stringify({ writeId: next.writeId, holder: next.holder, start: String(start), end: String(end) })}\n`,
        ),
      );
    }
  }
}

const [path] = process.argv.slice(2);
if (!path) throw new Error("usage: timed-api-process.ts <sqlite path>");
const sqlite = new SqliteStore({ path });
const server = await serve({ store: new StampedWrites(sqlite), host: "127.0.0.1", port: 0, insecureNoAuth: true });
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);

const shutdown = async () => {
  await server.close();
  await sqlite.close();
  process.exit(0);
};
process.once("SIGTERM", () => void shutdown());
process.stdin.on("close", () => void shutdown());
process.stdin.resume();
