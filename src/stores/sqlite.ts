/**
 * SQLite store: the embedded durable default. One row per lease, `rev` is the CAS token, and
 * every write is a single statement (`INSERT ... ON CONFLICT DO NOTHING` to create,
 * `UPDATE ... WHERE name = ? AND rev = ?` to replace), so several processes on one host can
 * share the file: WAL mode lets readers run beside the writer, busy_timeout queues writers.
 */
import { existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { z } from "zod";
import { LeaseConflictError, LeaseCorruptError, LeaseStoreError } from "../errors.js";
import {
  type CallOptions,
  type LeaseRecord,
  type LeaseStore,
  type ListOptions,
  parseRecord,
  prefixUpperBound,
  type Revision,
  type Stored,
  validate,
  validateName,
  validatePrefix,
  validateRecord,
} from "../lease.js";
import { importPeer } from "../peer.js";
import { parseRevision } from "./revision.js";

const Database = (await importPeer("better-sqlite3", "better-sqlite3@12", () => import("better-sqlite3"))).default;

export interface SqliteStoreOptions {
  /** File path, created with its folder when missing; ":memory:" for a private in-memory database. */
  path: string;
  /**
   * Create the file (and its folder) when missing. Default true; false for read-only uses
   * (`leasehold status`, `watch`, `release`), which must not leave an empty database behind.
   */
  create?: boolean;
  /** How long a writer waits for another process's lock before failing (ms). */
  busyTimeoutMs?: number;
  /** Table name (letters, digits, underscore). */
  table?: string;
}

interface Row {
  name: string;
  rev: number;
  record: string;
}

const PAGE = 200;

const optionsSchema = z.object(
  {
    path: z
      .string({ error: 'expected a file path or ":memory:"' })
      .min(1, { error: 'expected a file path or ":memory:"' }),
    busyTimeoutMs: z
      .number({ error: "expected milliseconds" })
      .int({ error: "expected whole milliseconds" })
      .nonnegative({ error: "expected a non-negative number" })
      .default(5000),
    table: z
      .string({ error: "expected a table name" })
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, {
        error: "expected 1-63 letters, digits or _, not starting with a digit",
      })
      .default("leases"),
    create: z.boolean({ error: "expected true or false" }).default(true),
  },
  { error: "expected an object with path" },
);

export class SqliteStore implements LeaseStore {
  readonly path: string;
  private readonly db: BetterSqlite3.Database;
  private readonly select: BetterSqlite3.Statement<[string], Row>;
  private readonly insert: BetterSqlite3.Statement<[string, string]>;
  private readonly update: BetterSqlite3.Statement<[string, string, number]>;
  private readonly page: BetterSqlite3.Statement<[string, string, string, number], Row>;

  constructor(options: SqliteStoreOptions) {
    // Checked before anything touches the disk: a rejected option creates no folder and no file.
    const o = validate("SqliteStore options", optionsSchema, options);
    const table = o.table;
    this.path = o.path;
    if (o.path !== ":memory:" && !o.create && !existsSync(o.path)) {
      throw new LeaseStoreError(`SQLite ${o.path}: no such database file (nothing was created)`, { ambiguous: false });
    }
    try {
      if (o.path !== ":memory:" && o.create) mkdirSync(dirname(o.path), { recursive: true });
      this.db = new Database(o.path, { timeout: o.busyTimeoutMs, fileMustExist: !o.create });
    } catch (cause) {
      // better-sqlite3 says "unable to open database file" without naming it.
      throw new LeaseStoreError(
        `SQLite ${o.path}: cannot open the database: ${(cause as Error).message} (does the folder exist, and may this user write it?)`,
        { ambiguous: false, cause },
      );
    }
    this.db.pragma("journal_mode = WAL");
    // NORMAL is durable across process crashes in WAL mode; only an OS crash can lose the last commit.
    this.db.pragma("synchronous = NORMAL");
    this.db.exec(
      `CREATE TABLE IF NOT EXISTS ${table} (name TEXT PRIMARY KEY NOT NULL, rev INTEGER NOT NULL, record TEXT NOT NULL) WITHOUT ROWID`,
    );
    this.select = this.db.prepare(`SELECT name, rev, record FROM ${table} WHERE name = ?`);
    this.insert = this.db.prepare(
      `INSERT INTO ${table} (name, rev, record) VALUES (?, 1, ?) ON CONFLICT(name) DO NOTHING`,
    );
    this.update = this.db.prepare(`UPDATE ${table} SET rev = rev + 1, record = ? WHERE name = ? AND rev = ?`);
    this.page = this.db.prepare(
      `SELECT name, rev, record FROM ${table} WHERE name >= ? AND name < ? AND name > ? ORDER BY name LIMIT ?`,
    );
  }

  async get(name: string, _options?: CallOptions): Promise<Stored | null> {
    validateName(name);
    return this.read(name);
  }

  async put(next: LeaseRecord, expected: Revision | null, _options?: CallOptions): Promise<Stored> {
    const record = validateRecord(next);
    const json = JSON.stringify(record);
    // Parsed before the statement: a bad revision is the caller's error, not a database failure.
    const previous = expected === null ? null : parseRevision(expected);
    const changes = this.run(() =>
      previous === null
        ? this.insert.run(record.name, json).changes
        : this.update.run(json, record.name, previous).changes,
    );
    if (changes === 1) {
      // Committed: the new rev is known without a read (a later writer may already have moved on).
      return { record, revision: String((previous ?? 0) + 1) };
    }
    throw new LeaseConflictError(record.name, this.read(record.name));
  }

  checkRevision(revision: Revision): void {
    parseRevision(revision);
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<Stored> {
    validatePrefix(prefix);
    let after = options.startAfter ?? "";
    let left = options.limit ?? Number.POSITIVE_INFINITY;
    while (left > 0) {
      const rows = this.run(() => this.page.all(prefix, prefixUpperBound(prefix), after, Math.min(PAGE, left)));
      for (const row of rows) yield toStored(row);
      if (rows.length < Math.min(PAGE, left)) return;
      left -= rows.length;
      after = rows[rows.length - 1]?.name ?? after;
    }
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  private read(name: string): Stored | null {
    const row = this.run(() => this.select.get(name));
    return row ? toStored(row) : null;
  }

  /**
   * A statement that fails before commit (busy, constraint, bad SQL) changed nothing; only an I/O
   * error can leave a commit's outcome unknown.
   */
  private run<T>(statement: () => T): T {
    try {
      return statement();
    } catch (cause) {
      const code = String((cause as { code?: unknown }).code ?? "");
      throw new LeaseStoreError(`SQLite ${this.path}: ${(cause as Error).message}`, {
        ambiguous: code.startsWith("SQLITE_IOERR"),
        cause,
      });
    }
  }
}

function toStored(row: Row): Stored {
  // SQLite columns are dynamically typed: a foreign write can leave any value in rev, and a
  // revision this store never issues would only fail later, as a confusing CAS error.
  const rev: unknown = row.rev;
  if (typeof rev !== "number" || !Number.isSafeInteger(rev) || rev < 1) {
    throw new LeaseCorruptError(row.name, [
      { path: "rev", message: `expected a positive integer revision, got ${JSON.stringify(rev)}` },
    ]);
  }
  return { record: parseRecord(row.name, row.record), revision: String(rev) };
}
