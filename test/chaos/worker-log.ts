/** What worker.ts writes (its log lines, the fenced tables) and processes.test.ts reads. */

export interface WorkerLogLine {
  event: "elected" | "deposed";
  identity: string;
  pid: number;
  term: number;
  /** Wall ms when the line was written. */
  wall: number;
  /** Wall ms the term's acquisition was stamped before it was sent (elected only). */
  acquiredAt?: number;
  reason?: string;
}

export const FENCED_SCHEMA = `
  CREATE TABLE IF NOT EXISTS fenced_resource (id INTEGER PRIMARY KEY CHECK (id = 1), term INTEGER NOT NULL, writer TEXT NOT NULL);
  INSERT OR IGNORE INTO fenced_resource (id, term, writer) VALUES (1, 0, '');
  CREATE TABLE IF NOT EXISTS fenced_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, term INTEGER NOT NULL, writer TEXT NOT NULL, pid INTEGER NOT NULL, wall INTEGER NOT NULL, accepted INTEGER NOT NULL);
`;
