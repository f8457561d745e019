import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll } from "vitest";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeShardedContract } from "../src/testkit/sharded-contract.js";
import { describeStoreContract } from "../src/testkit/store-contract.js";

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
describeElectorContract("sqlite", create);
describeShardedContract("sqlite", create);
