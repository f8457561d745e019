import type { Pool, PoolClient } from "pg";
import { fencedUpdate, fenceTransaction } from "leasehold/fencing/postgres";

// CREATE TABLE reports (id text PRIMARY KEY, body text NOT NULL, term bigint NOT NULL)

// The recipe: insert if absent, else update only if the row's term is <= mine, in one statement.
// No row back means a newer leader has written this row.
export async function saveReport(db: Pool | PoolClient, id: string, body: string, term: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO reports (id, body, term) VALUES ($1, $2, $3)
     ON CONFLICT (id) DO UPDATE SET body = excluded.body, term = excluded.term
     WHERE reports.term <= excluded.term`,
    [id, body, term],
  );
  return rowCount === 1; // false: refused; stop acting as leader, never retry
}

// The same with the helper, in your own transaction: it throws StaleTermError (with the row's
// term) when refused, and ROLLBACK takes your other writes back with it.
export async function saveReportWithHelper(pool: Pool, id: string, body: string, term: number): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await fencedUpdate(client, { table: "reports", key: { id }, set: { body }, term });
    await client.query("INSERT INTO report_log (id, term) VALUES ($1, $2)", [id, term]);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  } finally {
    client.release();
  }
}

// A fence table (fenceTableSql() makes it) fences a whole transaction, whatever it writes: first
// thing after BEGIN, the resource's term moves up to mine or the transaction is refused, and the
// fence's row stays locked until COMMIT, so a newer leader's transaction waits at its own fence.
export async function replaceDay(pool: Pool, day: string, lines: string[], term: number): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await fenceTransaction(client, { resource: `reports/${day}`, term });
    await client.query("DELETE FROM report_lines WHERE day = $1", [day]);
    for (const line of lines) await client.query("INSERT INTO report_lines (day, line) VALUES ($1, $2)", [day, line]);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  } finally {
    client.release();
  }
}
