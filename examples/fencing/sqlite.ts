import type { Database } from "better-sqlite3";
import { fencedUpdate } from "leasehold/fencing/sqlite";

// CREATE TABLE reports (id TEXT PRIMARY KEY, body TEXT NOT NULL, term INTEGER NOT NULL)

// Insert if absent, else update only if the row's term is <= mine: one statement (SQLite >= 3.24,
// PostgreSQL >= 9.5). 0 rows changed means a newer leader has written this row.
export function saveReport(db: Database, id: string, body: string, term: number): boolean {
  const { changes } = db
    .prepare(
      `INSERT INTO reports (id, body, term) VALUES (?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET body = excluded.body, term = excluded.term
       WHERE reports.term <= excluded.term`,
    )
    .run(id, body, term);
  return changes === 1; // false: refused; stop acting as leader, never retry
}

// A plain UPDATE: 0 rows changed is either "refused" or "no such row"; one read in the same
// transaction tells which.
export function updateReport(db: Database, id: string, body: string, term: number): "written" | "refused" | "absent" {
  const update = db.transaction(() => {
    const { changes } = db
      .prepare("UPDATE reports SET body = ?, term = ? WHERE id = ? AND term <= ?")
      .run(body, term, id, term);
    if (changes === 1) return "written";
    return db.prepare("SELECT term FROM reports WHERE id = ?").get(id) === undefined ? "absent" : "refused";
  });
  return update.immediate(); // BEGIN IMMEDIATE: no other writer between the UPDATE and the SELECT
}

// The same with the helper: builds and caches the upsert for any table and key, and throws
// StaleTermError (with the row's term) when refused.
export function saveReportWithHelper(db: Database, id: string, body: string, term: number): void {
  fencedUpdate(db, { table: "reports", key: { id }, set: { body }, term });
}
