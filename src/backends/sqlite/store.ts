/**
 * SQLite store: the embedded durable default. One row per lease, `rev` is the CAS token, and
 * every write is a single statement (`INSERT ... ON CONFLICT DO NOTHING` to create,
 * `UPDATE ... WHERE name = ? AND rev = ?` to replace), so several processes on one host can
 * share the file: WAL mode lets readers run beside the writer, busy_timeout queues writers.
 *
 * Durable before acknowledged: `put` resolves only after the commit holding its write has been
 * synced to disk (`synchronous = FULL`, or EXTRA), so an acknowledged acquisition or renewal
 * survives a power loss, not only a crash of the process. The fsync costs about a millisecond,
 * so writes do not run on the caller's thread: the process's SQLite writer thread
 * (./writer.ts) commits them with group commit, every write that arrived during one commit
 * going into the next, one transaction and one fsync for all, each write judged on its own.
 * Reads run here, on a connection of their own, and see every acknowledged write (WAL readers
 * see every commit that completed before they started); `getMany` is one `SELECT ... IN` over
 * them all. `:memory:` is private to this store and
 * has nothing to sync: it writes on this thread.
 */
import { existsSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { LeaseConflictError, LeaseCorruptError, LeaseStoreError } from "../../errors.js";
import type { CallOptions, LeaseRecord, LeaseStore, ListOptions, Stored } from "../../lease.js";
import {
  type Listed,
  parseRecord,
  prefixUpperBound,
  validate,
  validatePrefix,
  validateRecordName,
} from "../../lease.js";
import { listByPages, storedAt } from "../../listing.js";
import { importPeer } from "../../peer.js";
import { CounterStore } from "../counter-store.js";
import { type SqliteBaseline, type SqliteStoreOptions, sqliteOptionsSchema } from "./backend.js";
import {
  type DatabaseSettings,
  openDatabase,
  prepareStatements,
  type Row,
  type Statements,
  type WriteRequest,
  type WriteResult,
} from "./commit.js";
import { CommitWatch } from "./watch.js";
import { attachWriter } from "./writer.js";

const Database = (await importPeer("better-sqlite3", "better-sqlite3@12", () => import("better-sqlite3"))).default;

export type { SqliteStoreOptions } from "./backend.js";

const PAGE = 200;

interface Writer {
  write(request: WriteRequest): Promise<WriteResult>;
  release(): Promise<void>;
}

export class SqliteStore extends CounterStore implements LeaseStore {
  readonly path: string;
  private readonly db: BetterSqlite3.Database;
  private readonly statements: Statements;
  private readonly writer: Writer;
  /** Writes not answered yet: `close` waits for them. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly commits: CommitWatch;
  /** Writes commit on the reading connection (`:memory:`, the inline baseline): its data_version does not see them. */
  private readonly writesHere: boolean;

  /** One `SELECT ... IN` for all names: one snapshot of the database, as strong as `get`. */
  protected readonly readBatchSize = Number.POSITIVE_INFINITY;

  constructor(options: SqliteStoreOptions);
  /** @internal A baseline for the benchmark and the power-loss test's control, never for use. */
  constructor(options: SqliteStoreOptions, baseline: SqliteBaseline);
  constructor(options: SqliteStoreOptions, baseline: SqliteBaseline = {}) {
    super();
    // Checked before anything touches the disk: a rejected option creates no folder and no file.
    const o = validate("SqliteStore options", sqliteOptionsSchema, options);
    this.path = o.path;
    const memory = o.path === ":memory:";
    if (!memory && !o.create && !existsSync(o.path)) {
      throw new LeaseStoreError(`SQLite ${o.path}: no such database file (nothing was created)`, { ambiguous: false });
    }
    const settings: DatabaseSettings = {
      path: memory ? o.path : resolve(o.path),
      table: o.table,
      busyTimeoutMs: o.busyTimeoutMs,
      synchronous: baseline.synchronous ?? o.synchronous,
    };
    try {
      if (!memory && o.create) mkdirSync(dirname(o.path), { recursive: true });
      this.db = openDatabase(Database, settings, o.create);
    } catch (cause) {
      // better-sqlite3 says "unable to open database file" without naming it.
      throw new LeaseStoreError(
        `SQLite ${o.path}: cannot open the database: ${(cause as Error).message} (does the folder exist, and may this user write it?)`,
        { ambiguous: false, cause },
      );
    }
    this.statements = prepareStatements(this.db, o.table);
    const commitHere = (request: WriteRequest) => this.statements.commit([request])[0]!;
    this.writesHere = memory || baseline.inline === true;
    this.commits = new CommitWatch(
      {
        dataVersion: () => this.db.pragma("data_version", { simple: true }) as number,
        read: (name) => this.read(name),
        readMany: (names) => this.readRows(names),
      },
      o.watchPollMs,
    );
    this.writer = this.writesHere
      ? { write: async (request) => commitHere(request), release: async () => undefined }
      : attachWriter(JSON.stringify(settings), settings, commitHere);
  }

  protected async write(record: LeaseRecord, previous: number | null, _options?: CallOptions): Promise<Stored> {
    if (!this.db.open) throw new LeaseStoreError(`SQLite ${this.path}: the store is closed`, { ambiguous: false });
    const pending = this.writer.write({ name: record.name, json: JSON.stringify(record), expected: previous });
    this.inFlight.add(pending);
    let result: WriteResult;
    try {
      result = await pending;
    } finally {
      this.inFlight.delete(pending);
    }
    switch (result.kind) {
      case "applied":
        if (this.writesHere) this.commits.poke();
        // Committed: the new rev is known without a read (a later writer may already have moved on).
        return { record, revision: String(result.rev) };
      case "conflict":
        // The row as it stood when this write was judged, in the same transaction.
        throw new LeaseConflictError(record.name, result.current === null ? null : toStored(result.current));
      case "failed":
        throw new LeaseStoreError(`SQLite ${this.path}: ${result.message}`, { ambiguous: result.ambiguous });
    }
  }

  protected readBatch(names: string[], found: Map<string, Stored>): void {
    for (const row of this.selectMany(names)) found.set(row.name, toStored(row));
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<Listed> {
    validatePrefix(prefix);
    yield* listByPages(
      options,
      PAGE,
      (after, size) => this.run(() => this.statements.page.all(prefix, prefixUpperBound(prefix), after, size)),
      toStored,
    );
  }

  /**
   * Push (./watch.ts): the record now, then each change committed by any process sharing the file,
   * heard within `watchPollMs`. Ends when `signal` aborts.
   */
  watch(name: string, signal: AbortSignal): AsyncIterable<Stored | null> {
    validateRecordName(name);
    return this.commits.watch(name, signal);
  }

  /** Waits for this store's writes to be answered, then closes its connections. */
  async close(): Promise<void> {
    this.commits.stop();
    await Promise.allSettled(this.inFlight);
    await this.writer.release();
    if (this.db.open) this.db.close();
  }

  /** The watch's read: one snapshot of `names`, `undefined` where a row cannot be read. */
  private readRows(names: readonly string[]): Array<Stored | null | undefined> {
    const found = new Map(this.selectMany(names).map((row) => [row.name, row]));
    return names.map((name) => {
      const row = found.get(name);
      if (!row) return null;
      try {
        return toStored(row);
      } catch {
        return undefined;
      }
    });
  }

  /** The rows of `names` that exist, in one `SELECT ... IN`: one snapshot of the database. */
  private selectMany(names: readonly string[]): Row[] {
    return this.run(() => this.statements.selectMany.all(JSON.stringify(names)));
  }

  protected read(name: string): Stored | null {
    const row = this.run(() => this.statements.select.get(name));
    return row ? toStored(row) : null;
  }

  /** A read that fails (busy, I/O) changed nothing: never ambiguous. */
  private run<T>(statement: () => T): T {
    try {
      return statement();
    } catch (cause) {
      throw new LeaseStoreError(`SQLite ${this.path}: ${(cause as Error).message}`, { ambiguous: false, cause });
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
  return storedAt(String(rev), () => parseRecord(row.name, row.record));
}
