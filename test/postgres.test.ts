/**
 * PostgresStore against a real PostgreSQL 15 (started once per run by
 * test/servers/postgres.server.ts): the store, elector, bound and sharded contract suites. What only
 * PostgreSQL has is in the files beside it: postgres-store (table, settings, URLs, doctor),
 * postgres-connections (killed connections, ambiguous writes), postgres-push (LISTEN/NOTIFY) and
 * postgres-crash (SIGKILL of the server under load).
 */
import pg from "pg";
import { PostgresStore } from "../src/backends/postgres/store.js";
import { describeBoundContract } from "../src/testkit/bound-contract.js";
import { describeElectorContract } from "../src/testkit/elector-contract.js";
import { describeShardedContract } from "../src/testkit/sharded-contract.js";
import { describeStoreContract } from "../src/testkit/store-contract.js";
import { StoreWrapper } from "../src/testkit/store-wrapper.js";

const url = process.env.POSTGRES_URL!;
const table = "contract_leases";

// One store per test, as each process would have its own pool; one table shared by all. Every
// write NOTIFYs (push is on), so the store contract runs the statements production runs.
const create = async () => {
  const store = new PostgresStore({ connectionString: url, table, poolSize: 4 });
  return { store, dispose: () => store.close() };
};
describeStoreContract("postgres", {
  create,
  conflictCarriesCurrent: true,
  // JSON that is not a record (a foreign tool's row), at a sound revision: the column takes only JSON.
  plantUnreadable: async (name) => {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    try {
      await pool.query(`INSERT INTO ${table} (name, rev, record) VALUES ($1, 3, $2::json)`, [name, '{"holder":5}']);
    } finally {
      await pool.end();
    }
  },
});

// The elector, bound and sharded suites run on a manual clock, which lets the store's calls settle
// before it moves but cannot wait for a notification still on its way to the listener: they run
// on polls (push hidden). The push path runs in real time in postgres-push.test.ts.
const polled = async () => {
  const { store, dispose } = await create();
  return { store: new StoreWrapper(store, { without: ["watch"] }), dispose };
};
describeElectorContract("postgres", polled);
describeBoundContract("postgres", polled);
describeShardedContract("postgres", polled);
