/**
 * The SQLite store's SQL, in one place for both threads that run it: the schema and pragmas every
 * connection sets, and `commitWrites`, which commits a batch of compare-and-swap writes in ONE
 * transaction (group commit: one fsync for the batch), judging each write on its own exactly as
 * if it had been committed alone, in arrival order. The writer thread (./sqlite-writer-thread.ts)
 * runs it for every file; the store runs it in its own thread only for ":memory:" (nothing to
 * sync) and for the benchmark's one-commit-at-a-time baselines.
 *
 * Durability: `synchronous = FULL` (or EXTRA) in WAL mode syncs the WAL at every commit, before
 * the commit becomes visible to readers and before the writer is answered, so an acknowledged
 * write survives power loss (docs/design.md §2, "What survives a crash"). NORMAL would sync only
 * at checkpoints: every commit since the last one is lost on power loss, which reuses revisions
 * and terms (test/sqlite-power-loss.test.ts shows it).
 */
import type BetterSqlite3 from "better-sqlite3";

/** How a connection syncs. NORMAL exists for the benchmark's and the power-loss test's baselines only. */
export type Synchronous = "FULL" | "EXTRA" | "NORMAL";

/** Everything that identifies one database for a writer: two stores with equal settings share a connection. */
export interface DatabaseSettings {
  path: string;
  table: string;
  busyTimeoutMs: number;
  synchronous: Synchronous;
}

/** One compare-and-swap: `expected` null creates if absent, a number replaces that revision. */
export interface WriteRequest {
  name: string;
  json: string;
  expected: number | null;
}

export interface Row {
  name: string;
  rev: number;
  record: string;
}

export type WriteResult =
  /** Applied: the new revision. */
  | { kind: "applied"; rev: number }
  /** The expectation failed: the row as it was when this write was judged (null: no row). */
  | { kind: "conflict"; current: Row | null }
  /** The whole batch failed; `ambiguous` when the commit's outcome is unknown (an I/O error). */
  | { kind: "failed"; message: string; code: string; ambiguous: boolean };

/** Opens a connection with the store's pragmas and makes sure the table exists. */
export function openDatabase(
  Database: typeof BetterSqlite3,
  settings: DatabaseSettings,
  create: boolean,
): BetterSqlite3.Database {
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

/** The prepared statements of one connection. */
export interface Statements {
  select: BetterSqlite3.Statement<[string], Row>;
  insert: BetterSqlite3.Statement<[string, string]>;
  update: BetterSqlite3.Statement<[string, string, number]>;
  page: BetterSqlite3.Statement<[string, string, string, number], Row>;
  /** One immediate transaction over a batch of writes. */
  commit: (writes: readonly WriteRequest[]) => WriteResult[];
}

export function prepareStatements(db: BetterSqlite3.Database, table: string): Statements {
  const select = db.prepare<[string], Row>(`SELECT name, rev, record FROM ${table} WHERE name = ?`);
  const insert = db.prepare<[string, string]>(
    `INSERT INTO ${table} (name, rev, record) VALUES (?, 1, ?) ON CONFLICT(name) DO NOTHING`,
  );
  const update = db.prepare<[string, string, number]>(
    `UPDATE ${table} SET rev = rev + 1, record = ? WHERE name = ? AND rev = ?`,
  );
  const page = db.prepare<[string, string, string, number], Row>(
    `SELECT name, rev, record FROM ${table} WHERE name >= ? AND name < ? AND name > ? ORDER BY name LIMIT ?`,
  );
  const judge = (write: WriteRequest): WriteResult => {
    const changes =
      write.expected === null
        ? insert.run(write.name, write.json).changes
        : update.run(write.json, write.name, write.expected).changes;
    if (changes === 1) return { kind: "applied", rev: (write.expected ?? 0) + 1 };
    return { kind: "conflict", current: select.get(write.name) ?? null };
  };
  // IMMEDIATE: take the write lock before the first statement, so another process's writer makes
  // this one wait (busy_timeout) instead of failing halfway through the batch.
  const transaction = db.transaction((writes: readonly WriteRequest[]) => writes.map(judge)).immediate;
  const commit = (writes: readonly WriteRequest[]): WriteResult[] => {
    try {
      return transaction(writes);
    } catch (error) {
      // The transaction was rolled back, so no write of the batch applied, unless the failure was
      // an I/O error during COMMIT: then the outcome of every write in it is unknown.
      const code = String((error as { code?: unknown }).code ?? "");
      const failed: WriteResult = {
        kind: "failed",
        message: (error as Error).message,
        code,
        ambiguous: code.startsWith("SQLITE_IOERR"),
      };
      return writes.map(() => failed);
    }
  };
  return { select, insert, update, page, commit };
}
