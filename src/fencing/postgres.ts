/**
 * Fenced writes to PostgreSQL (`leasehold/fencing/postgres`), on node-postgres, in the caller's own
 * transaction. Two shapes (docs/fencing.md "PostgreSQL"):
 *
 * - **A fence column** on the row written (`fencedUpdate`): the row keeps the term of its last
 *   writer, and the write is one statement that applies only if that column is NULL or <= my term:
 *
 *     INSERT INTO t AS fenced (id, ..., term) VALUES ($1, ..., $n)
 *       ON CONFLICT (id) DO UPDATE SET ... = excluded...., term = excluded.term
 *       WHERE fenced.term IS NULL OR fenced.term <= excluded.term  RETURNING 1
 *
 *   or, without insert-if-absent, `UPDATE t SET ..., term = $n WHERE id = $1 AND (term IS NULL OR
 *   term <= $n)`. Terms are compared as numbers whatever the column's type (a text column would
 *   compare "10" below "9"). No row back means refused (or no such row): one SELECT tells which,
 *   and a refusal is a `StaleTermError` with the term found.
 * - **A fence table** (`fenceTransaction`): one row per fenced resource in `leasehold_fences`
 *   (`fenceTableSql`). Called first in a transaction, it moves the resource's term up to mine, or
 *   refuses, and its row lock holds until the transaction ends. So everything else the transaction
 *   writes, in any table and by any statement, is fenced by it: a deposed leader's transaction is
 *   refused once a newer one committed, and one that began first finishes before the newer one
 *   gets past its fence.
 *
 * At READ COMMITTED (PostgreSQL's default) a concurrent writer of the row makes the statement wait
 * for its lock and judge the row the other left; at REPEATABLE READ or SERIALIZABLE it raises a
 * serialization failure (40001) instead, which you retry as any such failure: the fence then judges
 * the newer row. After a `StaleTermError` roll your transaction back. Errors other than a refusal
 * are node-postgres's own. Runtime-neutral: it takes your client and never loads `pg`.
 */
import { z } from "zod";
import { LeaseholdError, LeaseValidationError } from "../errors.js";
import { validate } from "../lease.js";
import { admits, FenceCorruptError, parseStoredTerm, StaleTermError, termSchema } from "./fence.js";
import { type FencedUpdateOutcome, fenceOptionsParser, quote, rowResource, type SqlFenceOptions } from "./sql.js";

export { FenceCorruptError, StaleTermError } from "./fence.js";
export type { FencedUpdateOutcome } from "./sql.js";

/** What runs a statement: a `pg.Client` or a pool's client (in your transaction), or a `pg.Pool`. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

/** A value node-postgres binds as a parameter. */
export type SqlValue = string | number | bigint | boolean | Uint8Array | Date | null;

/** The row to write, and the term that writes it (./sql.ts); values node-postgres binds. */
export type FencedUpdateOptions = SqlFenceOptions<SqlValue>;

/** The kinds of `SqlValue`, as the options are checked. */
const BINDS = ["string", "number", "bigint", "boolean", "bytes", "date"] as const;
const parseOptions = fenceOptionsParser<SqlValue>(BINDS);

function checkQueryable(db: unknown, what: string): asserts db is Queryable {
  if (typeof (db as { query?: unknown } | null)?.query !== "function") {
    throw new LeaseValidationError(what, [{ path: "db", message: "expected a pg Client, PoolClient or Pool" }]);
  }
}

/**
 * Writes `set` (and `term` into the fence column) to the row named by `key`, only if the row has no
 * fence yet or its fence is <= `term`. Throws `StaleTermError` (with the row's term) when a newer
 * term has written the row, `FenceCorruptError` when its fence column holds something other than a
 * whole number, `LeaseValidationError` for bad options (nothing is sent then).
 */
export async function fencedUpdate(db: Queryable, options: FencedUpdateOptions): Promise<FencedUpdateOutcome> {
  const o = parseOptions(options);
  checkQueryable(db, "fencedUpdate");
  const keyColumns = Object.keys(o.key);
  const setColumns = Object.keys(o.set);
  const table = quote(o.table);
  const fence = quote(o.termColumn);
  const keyValues = keyColumns.map((c) => o.key[c] as SqlValue);
  const setValues = setColumns.map((c) => o.set[c] as SqlValue);
  const where = keyColumns.map((c, i) => `${quote(c)} = $${i + 1}`).join(" AND ");
  let sql: string;
  let values: unknown[];
  if (o.insertIfAbsent) {
    const columns = [...keyColumns, ...setColumns, o.termColumn].map(quote);
    const assignments = [...setColumns, o.termColumn].map((c) => `${quote(c)} = excluded.${quote(c)}`);
    sql =
      `INSERT INTO ${table} AS fenced (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")}) ` +
      `ON CONFLICT (${keyColumns.map(quote).join(", ")}) DO UPDATE SET ${assignments.join(", ")} ` +
      `WHERE fenced.${fence} IS NULL OR fenced.${fence}::numeric <= excluded.${fence}::numeric RETURNING 1`;
    values = [...keyValues, ...setValues, o.term];
  } else {
    const n = keyColumns.length;
    const assignments = [...setColumns, o.termColumn].map((c, i) => `${quote(c)} = $${n + i + 1}`);
    const mine = `$${n + setColumns.length + 2}`;
    sql = `UPDATE ${table} SET ${assignments.join(", ")} WHERE ${where} AND (${fence} IS NULL OR ${fence}::numeric <= ${mine}::numeric) RETURNING 1`;
    values = [...keyValues, ...setValues, o.term, o.term];
  }
  const written = await db.query(sql, values);
  if (written.rows.length > 0) return "written";
  // Nothing written: no such row (plain UPDATE only), or its fence refused. At READ COMMITTED this
  // read sees the row as it stands now, which is at least as new as the one that refused.
  const found = await db.query(`SELECT ${fence} AS fence FROM ${table} WHERE ${where}`, keyValues);
  const resource = rowResource(o.table, o.key);
  const row = found.rows[0];
  if (row === undefined) {
    if (o.insertIfAbsent) {
      // Only something outside the statement (a rule or trigger dropping the row) can get here.
      throw new LeaseholdError(`fencedUpdate: the upsert into ${resource} changed nothing and the row is absent`);
    }
    return "absent";
  }
  const seen = parseStoredTerm(resource, row.fence);
  // A stored term the statement would have passed: not a number the fence can compare.
  if (admits(seen, o.term)) throw new FenceCorruptError(resource, row.fence);
  throw new StaleTermError(resource, o.term, seen);
}

/** The fence table's name unless you give another. */
export const DEFAULT_FENCE_TABLE = "leasehold_fences";

/** The fence table's DDL: one row per fenced resource and the highest term that entered it. */
export function fenceTableSql(table = DEFAULT_FENCE_TABLE): string {
  return `CREATE TABLE IF NOT EXISTS ${quote(table)} (\n  resource text PRIMARY KEY,\n  term     bigint NOT NULL\n);`;
}

export interface FenceTransactionOptions {
  /** What the transaction writes, e.g. "reports/daily": any text, one fence per resource. */
  resource: string;
  /** The writer's term: the transaction goes on only if the resource's term is <= this. */
  term: number;
  /** The fence table (`fenceTableSql`). Default "leasehold_fences". */
  table?: string;
}

const fenceOptions = z.strictObject({
  resource: z.string({ error: "expected a resource name" }).min(1, { error: "expected a non-empty resource name" }),
  term: termSchema,
  table: z
    .string({ error: "expected a table name" })
    .min(1, { error: "expected a non-empty table name" })
    .default(DEFAULT_FENCE_TABLE),
});

/**
 * Fences the transaction `client` is in: moves `resource`'s term in the fence table up to `term`,
 * or throws `StaleTermError` (roll back then: a newer leader exists). Call it first, on the client
 * of a transaction you began (a pool would run it alone, and the lock that fences the rest would
 * be gone at once: refused). The row stays locked until the transaction ends, so another leader's
 * transaction waits at its own fence for this one to commit or roll back.
 */
export async function fenceTransaction(client: Queryable, options: FenceTransactionOptions): Promise<void> {
  const o = validate("fenceTransaction options", fenceOptions, options);
  checkQueryable(client, "fenceTransaction");
  if (typeof (client as { totalCount?: unknown }).totalCount === "number") {
    throw new LeaseValidationError("fenceTransaction", [
      {
        path: "client",
        message:
          "expected the client of your transaction (pool.connect(), then BEGIN), not a Pool: the fence lasts only as long as its transaction",
      },
    ]);
  }
  const table = quote(o.table);
  const written = await client.query(
    `INSERT INTO ${table} AS fence (resource, term) VALUES ($1, $2) ON CONFLICT (resource) DO UPDATE SET term = excluded.term WHERE fence.term <= excluded.term RETURNING 1`,
    [o.resource, o.term],
  );
  if (written.rows.length > 0) return;
  const found = await client.query(`SELECT term FROM ${table} WHERE resource = $1`, [o.resource]);
  const resource = `fence ${JSON.stringify(o.resource)} in table "${o.table}"`;
  const seen = parseStoredTerm(resource, found.rows[0]?.term);
  if (admits(seen, o.term)) throw new FenceCorruptError(resource, found.rows[0]?.term);
  throw new StaleTermError(resource, o.term, seen);
}
