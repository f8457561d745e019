import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll } from "vitest";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeShardedContract } from "../src/testkit/sharded-contract.js";
import { describeStoreContract } from "../src/testkit/store-contract.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-sqlite-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// One file shared by every test, as several processes on a host would share it.
const create = async () => {
  const store = new SqliteStore({ path: join(dir, "leases.db") });
  return { store, dispose: () => store.close() };
};
describeStoreContract("sqlite", {
  create,
  conflictCarriesCurrent: true,
  // A row of bytes that are not JSON, at a sound revision (a foreign tool's write).
  plantUnreadable: async (name) => {
    const raw = new Database(join(dir, "leases.db"));
    try {
      raw.prepare("INSERT INTO leases (name, rev, record) VALUES (?, 3, '{not json')").run(name);
    } finally {
      raw.close();
    }
  },
});
// The elector and sharded suites run on a manual clock, which cannot wait for a change still on
// its way through the store's real-time watch (src/backends/sqlite/watch.ts): they run on polls
// (push hidden). The push path runs in real time in sqlite-push.test.ts.
const polled = async () => {
  const { store, dispose } = await create();
  return { store: new StoreWrapper(store, { without: ["watch"] }), dispose };
};
describeElectorContract("sqlite", polled);
describeElectorContract("sqlite", polled, { session: false });
describeShardedContract("sqlite", polled);
