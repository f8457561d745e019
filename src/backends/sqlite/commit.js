// @ts-check
/**
 * The SQLite store's SQL, in one place for both threads that run it: the schema and pragmas every
 * connection sets, and `commit`, which commits a batch of compare-and-swap writes in ONE
 * transaction (group commit: one fsync for the batch), judging each write on its own exactly as
 * if it had been committed alone, in arrival order. The writer thread (./writer-thread.js)
 * runs it for every file; the store runs it in its own thread only for ":memory:" (nothing to
 * sync) and for the benchmark's one-commit-at-a-time baselines.
 *
 * JavaScript (type-checked from these JSDoc types) because a worker thread loads it: plain Node
 * runs it from the sources as from the package, with no TypeScript loader to boot first, so the
 * first write of a process never waits for one.
 *
 * Durability: `synchronous = FULL` (or EXTRA) in WAL mode syncs the WAL at every commit, before
 * the commit becomes visible to readers and before the writer is answered, so an acknowledged
 * write survives power loss (docs/design.md §2, "What survives a crash"). NORMAL would sync only
 * at checkpoints: every commit since the last one is lost on power loss, which reuses revisions
 * and terms (test/sqlite-power-loss.test.ts shows it).
 */

/** @typedef {import("better-sqlite3").Database} Database */

/**
 * How a connection syncs. NORMAL exists for the benchmark's and the power-loss test's baselines only.
 * @typedef {"FULL" | "EXTRA" | "NORMAL"} Synchronous
 */

/**
 * Everything that identifies one database for a writer: two stores with equal settings share a connection.
 * @typedef {{ path: string, table: string, busyTimeoutMs: number, synchronous: Synchronous }} DatabaseSettings
 */

/**
 * One compare-and-swap: `expected` null creates if absent, a number replaces that revision.
 * @typedef {{ name: string, json: string, expected: number | null }} WriteRequest
 */

/** @typedef {{ name: string, rev: number, record: string }} Row */

/**
 * "applied": the new revision. "conflict": the expectation failed; the row as it was when this
 * write was judged (null: no row). "failed": the whole batch failed, `ambiguous` when the commit's
 * outcome is unknown (an I/O error).
 * @typedef {{ kind: "applied", rev: number }
 *   | { kind: "conflict", current: Row | null }
 *   | { kind: "failed", message: string, code: string, ambiguous: boolean }} WriteResult
 */

/**
 * The prepared statements of one connection, and `commit`: one immediate transaction over a batch.
 * @typedef {{
 *   select: import("better-sqlite3").Statement<[string], Row>,
 *   selectMany: import("better-sqlite3").Statement<[string], Row>,
 *   page: import("better-sqlite3").Statement<[string, string, string, number], Row>,
 *   commit: (writes: readonly WriteRequest[]) => WriteResult[],
 * }} Statements
 */

/**
 * Opens a connection with the store's pragmas and makes sure the table exists.
 * @param {typeof import("better-sqlite3")} Database
 * @param {DatabaseSettings} settings
 * @param {boolean} create
 * @returns {Database}
 */
export function openDatabase(Database, settings, create) {
  const db = new Database(settings.path, { timeout: settings.busyTimeoutMs, fileMustExist: !create });
  try {
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${settings.synchronous}`);
    db.exec(
      `CREATE TABLE IF NOT EXISTS ${settings.table} (name TEXT PRIMARY KEY NOT NULL, rev INTEGER NOT NULL, record TEXT NOT NULL) WITHOUT ROWID`,
    );
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/**
 * @param {Database} db
 * @param {string} table
 * @returns {Statements}
 */
export function prepareStatements(db, table) {
  /** @type {import("better-sqlite3").Statement<[string], Row>} */
  const select = db.prepare(`SELECT name, rev, record FROM ${table} WHERE name = ?`);
  // Many names in one statement: a JSON array as the one parameter, so the statement is prepared
  // once for any number of names (no limit on bound variables to meet).
  /** @type {import("better-sqlite3").Statement<[string], Row>} */
  const selectMany = db.prepare(
    `SELECT name, rev, record FROM ${table} WHERE name IN (SELECT value FROM json_each(?))`,
  );
  /** @type {import("better-sqlite3").Statement<[string, string]>} */
  const insert = db.prepare(`INSERT INTO ${table} (name, rev, record) VALUES (?, 1, ?) ON CONFLICT(name) DO NOTHING`);
  /** @type {import("better-sqlite3").Statement<[string, string, number]>} */
  const update = db.prepare(`UPDATE ${table} SET rev = rev + 1, record = ? WHERE name = ? AND rev = ?`);
  /** @type {import("better-sqlite3").Statement<[string, string, string, number], Row>} */
  const page = db.prepare(
    `SELECT name, rev, record FROM ${table} WHERE name >= ? AND name < ? AND name > ? ORDER BY name LIMIT ?`,
  );
  /** @type {(write: WriteRequest) => WriteResult} */
  const judge = (write) => {
    const changes =
      write.expected === null
        ? insert.run(write.name, write.json).changes
        : update.run(write.json, write.name, write.expected).changes;
    if (changes === 1) return { kind: "applied", rev: (write.expected ?? 0) + 1 };
    return { kind: "conflict", current: select.get(write.name) ?? null };
  };
  // IMMEDIATE: take the write lock before the first statement, so another process's writer makes
  // this one wait (busy_timeout) instead of failing halfway through the batch.
  const transaction = db.transaction((/** @type {readonly WriteRequest[]} */ writes) => writes.map(judge)).immediate;
  /** @type {(writes: readonly WriteRequest[]) => WriteResult[]} */
  const commit = (writes) => {
    try {
      return transaction(writes);
    } catch (error) {
      // The transaction was rolled back, so no write of the batch applied, unless the failure was
      // an I/O error during COMMIT: then the outcome of every write in it is unknown.
      const code = String(/** @type {{ code?: unknown }} */ (error).code ?? "");
      /** @type {WriteResult} */
      const failed = {
        kind: "failed",
        message: /** @type {Error} */ (error).message,
        code,
        ambiguous: code.startsWith("SQLITE_IOERR"),
      };
      return writes.map(() => failed);
    }
  };
  return { select, selectMany, page, commit };
}
