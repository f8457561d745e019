/**
 * Fenced writes to an SQL row (`leasehold/fencing/sqlite`), on better-sqlite3. The row keeps the
 * term of its last writer in an integer column (default `term`), and a write is one statement that
 * applies only if that column is NULL (no fence yet) or <= my term:
 *
 *   INSERT INTO t (id, ..., term) VALUES (?, ..., ?)
 *     ON CONFLICT (id) DO UPDATE SET ... = excluded...., term = excluded.term
 *     WHERE t.term IS NULL OR t.term <= excluded.term
 *
 * or, without insert-if-absent, `UPDATE t SET ..., term = ? WHERE id = ? AND (term IS NULL OR
 * term <= ?)`. Zero rows changed means refused (or, for the UPDATE, no such row): the helper then
 * reads the row's term in the same transaction to say which, and throws `StaleTermError` with the
 * term it found. The same SQL works on PostgreSQL (docs/fencing.md).
 *
 * `fencedUpdate` is synchronous, like better-sqlite3, and runs in an IMMEDIATE transaction (a
 * savepoint when you call it inside a transaction of your own, so your other writes commit or roll
 * back with the fenced one). Node only (better-sqlite3 is a native module); it takes your open
 * `Database` and never loads the package itself.
 */
import type BetterSqlite3 from "better-sqlite3";
import { LeaseholdError, LeaseValidationError } from "../errors.js";
import { admits, FenceCorruptError, parseStoredTerm, StaleTermError } from "./fence.js";
import { type FencedUpdateOutcome, fenceOptionsParser, quote, rowResource, type SqlFenceOptions } from "./sql.js";

export { FenceCorruptError, StaleTermError } from "./fence.js";
export type { FencedUpdateOutcome } from "./sql.js";

/** A value better-sqlite3 binds. */
export type SqlValue = string | number | bigint | Uint8Array | null;

/** The row to write, and the term that writes it (./sql.ts); values better-sqlite3 binds. */
export type FencedUpdateOptions = SqlFenceOptions<SqlValue>;

/** The kinds of `SqlValue`, as the options are checked. */
const BINDS = ["string", "number", "bigint", "bytes"] as const;
const parseOptions = fenceOptionsParser<SqlValue>(BINDS);

const WRITTEN = Symbol("written");
const ABSENT = Symbol("absent");
/** What the transaction found: written, no such row, or the stored fence that refused the write. */
type Found = typeof WRITTEN | typeof ABSENT | { stored: unknown };

interface Statements {
  /** The write, then (only when it changed nothing) the row's fence, in one IMMEDIATE transaction. */
  transaction: BetterSqlite3.Transaction<(params: SqlValue[], keyValues: SqlValue[]) => Found>;
}

/** Statements and their transaction per database and SQL shape: building them costs more than running. */
const cache = new WeakMap<BetterSqlite3.Database, Map<string, Statements>>();

/**
 * Writes `set` (and `term` into the fence column) to the row named by `key`, only if the row has no
 * fence yet or its fence is <= `term`. Throws `StaleTermError` (with the row's term) when a newer
 * term has written the row, `FenceCorruptError` when its fence column holds something other than
 * a whole number, `LeaseValidationError` for bad options (nothing is sent then).
 */
export function fencedUpdate(db: BetterSqlite3.Database, options: FencedUpdateOptions): FencedUpdateOutcome {
  const o = parseOptions(options);
  if (typeof (db as { prepare?: unknown } | null)?.prepare !== "function") {
    throw new LeaseValidationError("fencedUpdate", [{ path: "db", message: "expected a better-sqlite3 Database" }]);
  }
  const keyColumns = Object.keys(o.key);
  const setColumns = Object.keys(o.set);
  const statements = prepare(db, o.table, keyColumns, setColumns, o.termColumn, o.insertIfAbsent);
  const keyValues = keyColumns.map((c) => o.key[c] as SqlValue);
  const setValues = setColumns.map((c) => o.set[c] as SqlValue);
  const params = o.insertIfAbsent ? [...keyValues, ...setValues, o.term] : [...setValues, o.term, ...keyValues, o.term];
  const fence = statements.transaction.immediate(params, keyValues);
  if (fence === WRITTEN) return "written";
  const resource = rowResource(o.table, o.key);
  if (fence === ABSENT) {
    if (o.insertIfAbsent) {
      // Only something outside the statement (a trigger ignoring the row) can get here.
      throw new LeaseholdError(`fencedUpdate: the upsert into ${resource} changed nothing and the row is absent`);
    }
    return "absent";
  }
  const seen = parseStoredTerm(resource, fence.stored);
  if (admits(seen, o.term)) {
    // The statement's condition would have passed: the stored value compares unlike a number
    // (SQLite orders TEXT above every INTEGER), so it is not a term.
    throw new FenceCorruptError(resource, fence.stored);
  }
  throw new StaleTermError(resource, o.term, seen);
}

function prepare(
  db: BetterSqlite3.Database,
  table: string,
  keyColumns: string[],
  setColumns: string[],
  termColumn: string,
  insertIfAbsent: boolean,
): Statements {
  const signature = JSON.stringify([table, keyColumns, setColumns, termColumn, insertIfAbsent]);
  let perDb = cache.get(db);
  if (!perDb) {
    perDb = new Map();
    cache.set(db, perDb);
  }
  const cached = perDb.get(signature);
  if (cached) return cached;
  const t = quote(table);
  const fence = quote(termColumn);
  const where = keyColumns.map((c) => `${quote(c)} = ?`).join(" AND ");
  let sql: string;
  if (insertIfAbsent) {
    const columns = [...keyColumns, ...setColumns, termColumn].map(quote);
    const assignments = [...setColumns, termColumn].map((c) => `${quote(c)} = excluded.${quote(c)}`);
    sql =
      `INSERT INTO ${t} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")}) ` +
      `ON CONFLICT (${keyColumns.map(quote).join(", ")}) DO UPDATE SET ${assignments.join(", ")} ` +
      `WHERE ${t}.${fence} IS NULL OR ${t}.${fence} <= excluded.${fence}`;
  } else {
    const assignments = [...setColumns, termColumn].map((c) => `${quote(c)} = ?`);
    sql = `UPDATE ${t} SET ${assignments.join(", ")} WHERE ${where} AND (${fence} IS NULL OR ${fence} <= ?)`;
  }
  const write = db.prepare<SqlValue[]>(sql);
  const readTerm = db.prepare<SqlValue[], { fence: unknown }>(`SELECT ${fence} AS fence FROM ${t} WHERE ${where}`);
  const statements: Statements = {
    transaction: db.transaction((params: SqlValue[], keyValues: SqlValue[]): Found => {
      if (write.run(...params).changes > 0) return WRITTEN;
      // Nothing changed: either no such row (plain UPDATE only) or its fence refused. Read it in
      // this same transaction, so the answer describes the state that refused the write.
      const row = readTerm.get(...keyValues);
      return row === undefined ? ABSENT : { stored: row.fence };
    }),
  };
  perDb.set(signature, statements);
  return statements;
}
