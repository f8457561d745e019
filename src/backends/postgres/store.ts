/**
 * PostgreSQL store (`leasehold/stores/postgres`, docs/postgres.md), on node-postgres (`pg`, an
 * optional peer loaded on first use). One row per lease: `name` (bytewise order), `rev` (the CAS
 * token, a counter from 1) and `record`, the whole record as one JSON document, so record fields
 * added later need no migration. Options and the `postgres://` URL: ./backend.ts.
 *
 * Writes are one statement each, in autocommit: a create is `INSERT ... ON CONFLICT (name) DO
 * NOTHING`, a replace `UPDATE ... SET rev = rev + 1 WHERE name = $1 AND rev = $2`, both RETURNING
 * the new revision, and with push on, the same statement NOTIFYs (a SELECT of `pg_notify` over the
 * written row), so the notification is sent exactly when the write commits. No row back is a
 * conflict: one more statement reads the current row (a new snapshot, so it sees the write that
 * won even when it committed while ours waited for the row lock) for the `LeaseConflictError`.
 *
 * Durable before acknowledged: PostgreSQL answers a commit after its WAL record is flushed when
 * `fsync` and `synchronous_commit` are on. Before its first call the store reads both on a
 * connection and refuses anything else (`StoreContractError` naming the setting). On that first
 * call it also makes the table if missing (`createTable`, DDL from the declaration), or checks the
 * one it finds: `name` text that sorts bytewise (the "C" collation, or a database default that
 * sorts so), `rev` bigint, `record` json or jsonb.
 *
 * Connections: a pool (the caller's, or one this store makes and ends). A connection the server
 * killed is recognised: one the pool holds idle is dropped by the pool (the store listens for its
 * `error`); one found dead when a call begins is replaced before anything is sent; a read whose
 * reused connection fails is sent again on the next (reads change nothing), until a new connection
 * fails too or the pool's size is reached. A write whose connection fails, or that is cancelled or
 * times out after it was sent, is a `LeaseStoreError` with `ambiguous: true`: it may have
 * committed, and the one write path (src/elector/cas.ts) resolves it by `writeId`. The store never
 * sends a write twice. A server error that certainly changed nothing (bad data, a missing table,
 * no permission, a read-only server) is `ambiguous: false`. A statement is given up
 * `statementTimeoutMs` + 1 s after it was sent (a dead network answers nothing), and its
 * connection closed.
 *
 * Push (`watch`): ./listener.ts. Reads: `get`, `getMany` (500 names per `= ANY($1)`),
 * `list` (pages of 200 in name order). Runtime-neutral: node-postgres does the I/O.
 */
import type { Pool, PoolClient, QueryResultRow } from "pg";
import {
  isLeaseCorruptError,
  LeaseConflictError,
  LeaseCorruptError,
  LeaseStoreError,
  StoreContractError,
} from "../../errors.js";
import {
  type CallOptions,
  type LeaseRecord,
  type LeaseStore,
  type Listed,
  type ListOptions,
  parseRecord,
  prefixUpperBound,
  type Stored,
  validate,
  validatePrefix,
  validateRecordName,
} from "../../lease.js";
import { listByPages, storedAt } from "../../listing.js";
import { importPeer } from "../../peer.js";
import { CounterStore } from "../counter-store.js";
import {
  DEFAULT_POOL_SIZE,
  NOTIFY_CHANNEL,
  type PostgresStoreOptions,
  postgresMigrationSql,
  postgresOptionsSchema,
  qualifiedTable,
} from "./backend.js";
import { isNewer, notifyPayload, PostgresListener } from "./listener.js";

const { Pool: PoolClass } = await importPeer("pg", "pg@8", () => import("pg"));

export { DEFAULT_TABLE, type PostgresStoreOptions, postgresMigrationSql } from "./backend.js";

const DEFAULT_STATEMENT_TIMEOUT_MS = 5000;
/** A call is given up this long after the server's own statement timeout would have ended it. */
const CALL_MARGIN_MS = 1000;
const PAGE = 200;
const READ_BATCH = 500;
/** How often the push listener checks its connection (`SELECT 1`). */
const LISTENER_CHECK_MS = 5000;

/**
 * SQLSTATE classes of errors the server raises before it changes anything: data exceptions (22),
 * integrity (23), read-only transaction (25), authorization (28), missing database or schema (3D,
 * 3F), syntax and access rules (42: a missing table or column, no permission), unsupported (0A).
 * Any other failure of a write that was sent may have committed.
 */
const CERTAINLY_NOT_APPLIED = new Set(["22", "23", "25", "28", "3D", "3F", "42", "0A"]);

interface Row extends QueryResultRow {
  name: string;
  rev: string;
  record: string;
}

type Kind = "read" | "write";

/** A connection lent by the pool: `giveBack` returns it (closed, with an error or `true`). */
interface Lent {
  client: PoolClient;
  /** Opened for this call: no earlier call used it. */
  fresh: boolean;
  giveBack(destroy?: Error | true): void;
}

interface Settings extends QueryResultRow {
  synchronous_commit: string;
  fsync: string;
  present: boolean;
}

interface Column extends QueryResultRow {
  name: string;
  type: string;
  collation: string | null;
}

export class PostgresStore extends CounterStore implements LeaseStore {
  /** The table, schema-qualified when a schema is given. */
  readonly table: string;
  private readonly pool: Pool;
  /** Only a pool this store created is ended by `close()`. */
  private readonly ownsPool: boolean;
  private readonly createTable: boolean;
  /** Writes NOTIFY (push on). */
  private readonly notifies: boolean;
  private readonly callTimeoutMs: number;
  private readonly where: string;
  private readonly sql: ReturnType<typeof statements>;
  private readonly listener: PostgresListener | undefined;
  private readonly onPoolError = () => undefined;
  /** Connections the pool opened and no call has used yet: a failure on one is not an idle death. */
  private readonly fresh = new WeakSet<PoolClient>();
  private readonly onPoolConnect = (client: PoolClient) => {
    this.fresh.add(client);
  };
  private ready: Promise<void> | undefined;
  private get poolSize(): number {
    return this.pool.options.max ?? DEFAULT_POOL_SIZE;
  }
  private closed = false;
  /** Calls not answered yet: `close` waits for them. */
  private readonly inFlight = new Set<Promise<unknown>>();
  /**
   * `watch` when push is on (docs/design.md §2: capabilities are declared by presence), so a store
   * with push off is polled by followers and the API's watch hub like any store without it.
   */
  readonly watch?: (name: string, signal: AbortSignal) => AsyncIterable<Stored | null>;

  /** In batches of 500 names, each one `SELECT ... WHERE name = ANY($1)`, as strong as `get`. */
  protected readonly readBatchSize = READ_BATCH;

  constructor(options: PostgresStoreOptions) {
    super();
    const o = validate("PostgresStore options", postgresOptionsSchema, options);
    this.table = qualifiedTable(o);
    this.createTable = o.createTable;
    this.notifies = o.push;
    const statementTimeoutMs = o.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
    this.callTimeoutMs = statementTimeoutMs + CALL_MARGIN_MS;
    this.where = `PostgreSQL ${describeServer(o.connectionString)}table ${this.table}`;
    this.sql = statements(this.table);
    this.ownsPool = o.pool === undefined;
    this.pool =
      o.pool ??
      new PoolClass({
        connectionString: o.connectionString,
        max: o.poolSize ?? DEFAULT_POOL_SIZE,
        statement_timeout: statementTimeoutMs,
        connectionTimeoutMillis: statementTimeoutMs,
        keepAlive: true,
        application_name: "leasehold",
      });
    // A pooled connection the server killed while idle is an `error` event on the pool (which drops
    // it); with no listener, Node would throw it and end the process.
    this.pool.on("error", this.onPoolError);
    this.pool.on("connect", this.onPoolConnect);
    if (o.push) {
      const listener = new PostgresListener({
        connect: async () => (await this.lend()).client,
        read: (names) => this.getMany(names),
        channel: NOTIFY_CHANNEL,
        table: this.table,
        pollMs: o.watchPollMs,
        checkMs: LISTENER_CHECK_MS,
      });
      this.listener = listener;
      this.watch = (name, signal) => this.follow(listener, name, signal);
    }
  }

  /**
   * Push's state, for health checks and tests: whether a connection LISTENs now (only while some
   * lease is watched), and how many times one has started to (a lost one is replaced).
   */
  get pushState(): { listening: boolean; listens: number } {
    return { listening: this.listener?.listening ?? false, listens: this.listener?.connections ?? 0 };
  }

  protected async write(
    record: LeaseRecord,
    previous: number | null,
    options: CallOptions | undefined,
  ): Promise<Stored> {
    const revision = (previous ?? 0) + 1;
    const json = JSON.stringify(record);
    const notify = this.notifies ? [NOTIFY_CHANNEL, notifyPayload(this.table, record.name, revision)] : [];
    const result =
      previous === null
        ? await this.query(
            "write",
            record.name,
            this.notifies ? this.sql.createNotify : this.sql.create,
            [record.name, json, ...notify],
            options,
          )
        : await this.query(
            "write",
            record.name,
            this.notifies ? this.sql.replaceNotify : this.sql.replace,
            [record.name, json, String(previous), ...notify],
            options,
          );
    if (result.length === 1) return { record, revision: String(revision) };
    // Not written: the expectation failed. The row as it stands now, read by a statement of its own.
    let current: Stored | null;
    try {
      current = await this.read(record.name, options);
    } catch (error) {
      if (isLeaseCorruptError(error)) throw error;
      throw new LeaseConflictError(record.name, undefined, { cause: error });
    }
    throw new LeaseConflictError(record.name, current);
  }

  protected async readBatch(
    batch: string[],
    found: Map<string, Stored>,
    options: CallOptions | undefined,
  ): Promise<void> {
    const rows = await this.query("read", batch[0]!, this.sql.selectMany, [batch], options);
    for (const row of rows) found.set(row.name, toStored(row.name, row));
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<Listed> {
    validatePrefix(prefix);
    // A row that cannot be read is yielded in its place (src/listing.ts): the rest are served.
    yield* listByPages(
      options,
      PAGE,
      (after, size) => this.query("read", prefix, this.sql.page, [prefix, prefixUpperBound(prefix), after, size]),
      (row) => toStored(row.name, row),
    );
  }

  /**
   * Creates the table if it is missing (whatever `createTable` says), then checks the server and
   * the table as the first call does. What `leasehold migrate` runs. Resolves to whether the table
   * had to be made.
   */
  async migrate(): Promise<"created" | "present"> {
    const made = await this.prepare(true);
    this.ready = Promise.resolve();
    return made;
  }

  /** Waits for calls in flight, stops the listener, and ends the pool if this store made it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.listener?.close();
    await Promise.allSettled(this.inFlight);
    this.pool.off("connect", this.onPoolConnect);
    // A pool of ours keeps its error listener while it ends and after: a connection the server
    // kills meanwhile (57P01) is still an `error` event, which with no listener ends the process.
    if (this.ownsPool) await this.pool.end();
    else this.pool.off("error", this.onPoolError);
  }

  /** Push: one stream of the lease, the current record first, then each newer one (./listener.ts). */
  private async *follow(listener: PostgresListener, name: string, signal: AbortSignal): AsyncIterable<Stored | null> {
    validateRecordName(name);
    await this.ensureReady();
    const mailbox = new Mailbox<Stored | null>();
    const unsubscribe = await listener.subscribe(name, (stored) => mailbox.put(stored));
    try {
      let last = await this.read(name, { signal });
      listener.seen(name, last);
      yield last;
      for (;;) {
        const next = await mailbox.take(signal);
        if (next === ABORTED) return;
        if (!isNewer(next, last)) continue;
        last = next;
        yield next;
      }
    } finally {
      unsubscribe();
    }
  }

  protected async read(name: string, options?: CallOptions): Promise<Stored | null> {
    const rows = await this.query("read", name, this.sql.select, [name], options);
    const row = rows[0];
    return row ? toStored(name, row) : null;
  }

  /**
   * Runs one statement on one connection of the pool, once the server and table are checked. A
   * connection found dead before sending is replaced; a read whose connection fails is sent once
   * more on another; a write never is (ambiguous instead).
   */
  private async query(
    kind: Kind,
    lease: string,
    text: string,
    values: unknown[],
    options?: CallOptions,
  ): Promise<Row[]> {
    if (this.closed) throw new LeaseStoreError(`${this.where}: the store is closed`, { ambiguous: false });
    if (options?.signal?.aborted) {
      throw new LeaseStoreError(`${this.where}: ${kind} of lease "${lease}" aborted before it was sent`, {
        ambiguous: false,
      });
    }
    await this.ensureReady();
    const pending = this.send(kind, lease, text, values, options?.signal);
    this.inFlight.add(pending);
    try {
      return await pending;
    } finally {
      this.inFlight.delete(pending);
    }
  }

  private async send<R extends QueryResultRow = Row>(
    kind: Kind,
    lease: string,
    text: string,
    values: unknown[],
    signal: AbortSignal | undefined,
  ): Promise<R[]> {
    for (let attempt = 1; ; attempt++) {
      const lent = await this.checkout(kind, lease, signal);
      const outcome = await this.run<R>(lent, text, values, signal);
      if ("rows" in outcome) return outcome.rows;
      const { error, connectionLost } = outcome;
      // A reused connection may have died while idle (the server restarted, or killed it): a read
      // goes again on the next, until a new connection fails too or every pooled one was tried.
      const again = !lent.fresh && !(error instanceof CallTimeout) && attempt <= this.poolSize;
      if (kind === "read" && connectionLost && again && !signal?.aborted) continue;
      throw this.failure(kind, lease, error, { sent: true, connectionLost });
    }
  }

  /**
   * A connection of the pool, with an error listener attached inside the pool's own callback: a
   * connection killed just as the pool hands it over reports its error in the same chunk of input,
   * before a promise's continuation could attach one (and an error nobody listens to ends the process).
   */
  private lend(): Promise<Lent> {
    return new Promise((resolve, reject) => {
      this.pool.connect((error, client, release) => {
        if (error || !client) return reject(error ?? new Error("the pool gave no connection"));
        const guard = () => undefined; // the statement's own promise reports the error
        client.on("error", guard);
        resolve({
          client,
          fresh: this.fresh.delete(client),
          giveBack: (destroy) => {
            release(destroy);
            client.off("error", guard);
          },
        });
      });
    });
  }

  /** A connection, known to be usable before anything is sent on it. */
  private async checkout(kind: Kind, lease: string, signal: AbortSignal | undefined): Promise<Lent> {
    for (let tries = 0; ; tries++) {
      let lent: Lent;
      try {
        lent = await abortable(this.lend(), signal, (late) => late.giveBack());
      } catch (error) {
        throw this.failure(kind, lease, error, { sent: false, connectionLost: false });
      }
      if (queryable(lent.client)) return lent;
      // Killed by the server while idle, its error not yet seen by the pool: nothing was sent on it.
      lent.giveBack(true);
      if (tries > this.poolSize) {
        throw new LeaseStoreError(
          `${this.where}: no usable connection in the pool (${kind} of lease "${lease}", nothing was sent)`,
          { ambiguous: false },
        );
      }
    }
  }

  /** One statement, given up at the call timeout or on abort (the connection is then closed). */
  private async run<R extends QueryResultRow>(
    lent: Lent,
    text: string,
    values: unknown[],
    signal: AbortSignal | undefined,
  ): Promise<{ rows: R[] } | { error: unknown; connectionLost: boolean }> {
    const ignore = () => undefined;
    const query = lent.client.query<R>(text, values);
    query.catch(ignore);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new CallTimeout(`no answer within ${this.callTimeoutMs} ms`)),
        this.callTimeoutMs,
      );
    });
    late.catch(ignore);
    try {
      const result = await abortable(Promise.race([query, late]), signal);
      lent.giveBack();
      return { rows: result.rows };
    } catch (error) {
      const connectionLost = !isServerError(error) || isFatal(error);
      // A connection that failed, or whose statement may still be running, is closed, never reused.
      lent.giveBack(connectionLost ? asError(error) : undefined);
      return { error, connectionLost };
    } finally {
      clearTimeout(timer);
    }
  }

  private failure(
    kind: Kind,
    lease: string,
    error: unknown,
    how: { sent: boolean; connectionLost: boolean },
  ): LeaseStoreError {
    if (error instanceof LeaseStoreError) return error;
    const code = isServerError(error) ? (error as { code: string }).code : undefined;
    const certain = code !== undefined && !isFatal(error) && CERTAINLY_NOT_APPLIED.has(code.slice(0, 2));
    const ambiguous = kind === "write" && how.sent && !certain;
    const what = `${kind} of lease "${lease}"`;
    const why = !how.sent
      ? "no connection"
      : error instanceof CallTimeout || error === ABORTED || isAbort(error)
        ? "given up"
        : how.connectionLost
          ? "connection lost"
          : `SQLSTATE ${code}`;
    const outcome =
      kind === "write" ? (ambiguous ? "; the write may or may not have applied" : "; nothing was written") : "";
    return new LeaseStoreError(`${this.where}: ${what} failed (${why}): ${messageOf(error)}${outcome}`, {
      ambiguous,
      cause: error,
    });
  }

  /** The first call checks the server and the table (once; again after a failure). */
  private ensureReady(): Promise<void> {
    if (!this.ready) {
      this.ready = this.prepare(this.createTable).then(
        () => undefined,
        (error: unknown) => {
          this.ready = undefined;
          throw error;
        },
      );
    }
    return this.ready;
  }

  private async prepare(create: boolean): Promise<"created" | "present"> {
    const [s] = await this.send<Settings>("read", "(set-up)", this.sql.settings, [this.table], undefined);
    if (!s) throw new LeaseStoreError(`${this.where}: the server answered no settings`, { ambiguous: false });
    if (s.fsync !== "on") {
      throw new StoreContractError(
        `${this.where}: fsync is "${s.fsync}" on this server, so a commit it acknowledged can be lost in a crash, and with it a term (docs/postgres.md "Durability"); set fsync = on`,
      );
    }
    if (s.synchronous_commit !== "on" && s.synchronous_commit !== "remote_apply") {
      throw new StoreContractError(
        `${this.where}: synchronous_commit is "${s.synchronous_commit}" for this connection, so a write can be acknowledged before it is durable (docs/postgres.md "Durability"); set it to on for this role or database (ALTER ROLE ... SET synchronous_commit = on)`,
      );
    }
    let made: "created" | "present" = "present";
    if (!s.present) {
      if (!create) {
        throw new LeaseStoreError(
          `${this.where}: the table does not exist; create it with \`leasehold migrate <store-url>\` as a role that may, or with the SQL in docs/postgres.md (nothing was written)`,
          { ambiguous: false },
        );
      }
      made = await this.createTableNow();
    }
    await this.checkColumns();
    return made;
  }

  private async createTableNow(): Promise<"created" | "present"> {
    try {
      // One simple query of two statements: one implicit transaction, rolled back whole on an error.
      await this.send("read", "(set-up)", this.sql.migration, [], undefined);
      return "created";
    } catch (error) {
      // Another process made it at the same moment (a unique violation in the catalog).
      const code = (error as { cause?: { code?: unknown } }).cause?.code;
      if (code === "23505" || code === "42P07") return "present";
      throw error;
    }
  }

  /** The table found is one this store can use: refused otherwise, naming the column. */
  private async checkColumns(): Promise<void> {
    const rows = await this.send<Column>("read", "(set-up)", this.sql.columns, [this.table], undefined);
    const column = new Map(rows.map((r) => [r.name, r]));
    const issues: string[] = [];
    const name = column.get("name");
    if (name?.type !== "text" || (name.collation !== "C" && name.collation !== "POSIX")) {
      issues.push(
        `"name" must be text COLLATE "C" (is ${name ? `${name.type} ${name.collation ?? "default"}` : "missing"})`,
      );
    }
    if (column.get("rev")?.type !== "bigint")
      issues.push(`"rev" must be bigint (is ${column.get("rev")?.type ?? "missing"})`);
    const record = column.get("record")?.type;
    if (record !== "json" && record !== "jsonb") issues.push(`"record" must be json (is ${record ?? "missing"})`);
    if (issues.length > 0) {
      throw new StoreContractError(
        `${this.where}: not a leasehold lease table: ${issues.join("; ")} (docs/postgres.md has its SQL)`,
      );
    }
  }
}

/** The statements of one table. */
function statements(table: string) {
  const returning = "RETURNING name, rev";
  const notified = "SELECT rev::text AS rev, pg_notify($%d, $%d) FROM written";
  const create = `INSERT INTO ${table} (name, rev, record) VALUES ($1, 1, $2::json) ON CONFLICT (name) DO NOTHING`;
  const replace = `UPDATE ${table} SET rev = rev + 1, record = $2::json WHERE name = $1 AND rev = $3::bigint`;
  return {
    settings:
      "SELECT current_setting('synchronous_commit') AS synchronous_commit, current_setting('fsync') AS fsync, to_regclass($1) IS NOT NULL AS present",
    columns:
      // The database's default collation counts as bytewise when it sorts names so: checked by
      // sorting names whose bytewise order a language's collation changes (it skips punctuation).
      "SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, CASE WHEN c.collname <> 'default' THEN c.collname WHEN (SELECT array_agg(v ORDER BY v) FROM unnest(ARRAY['a~', 'a_b', 'a0', 'a/c', 'a.z', 'a.a', 'a-b']) v) = ARRAY['a-b', 'a.a', 'a.z', 'a/c', 'a0', 'a_b', 'a~'] THEN 'C' ELSE 'default' END AS collation FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped",
    migration: postgresMigrationSqlOf(table),
    select: `SELECT name, rev::text AS rev, record::text AS record FROM ${table} WHERE name = $1`,
    selectMany: `SELECT name, rev::text AS rev, record::text AS record FROM ${table} WHERE name = ANY($1::text[])`,
    page: `SELECT name, rev::text AS rev, record::text AS record FROM ${table} WHERE name >= $1 AND name < $2 AND name > $3 ORDER BY name LIMIT $4`,
    create: `${create} RETURNING rev::text AS rev`,
    replace: `${replace} RETURNING rev::text AS rev`,
    createNotify: `WITH written AS (${create} ${returning}) ${notified.replace("%d", "3").replace("%d", "4")}`,
    replaceNotify: `WITH written AS (${replace} ${returning}) ${notified.replace("%d", "4").replace("%d", "5")}`,
  };
}

/** The migration of an already quoted table name. */
function postgresMigrationSqlOf(quoted: string): string {
  const [schema, table] = quoted.includes(".") ? quoted.split(".") : [undefined, quoted];
  const unquote = (s: string) => s.slice(1, -1);
  return postgresMigrationSql({ table: unquote(table!), ...(schema === undefined ? {} : { schema: unquote(schema) }) });
}

function toStored(name: string, row: Row): Stored {
  // A foreign write can leave any value in rev; a revision this store never issues would only
  // fail later, as a confusing CAS error.
  if (!/^[1-9][0-9]{0,15}$/.test(row.rev)) {
    throw new LeaseCorruptError(name, [
      { path: "rev", message: `expected a positive integer revision, got ${JSON.stringify(row.rev)}` },
    ]);
  }
  return storedAt(row.rev, () => parseRecord(name, row.record));
}

/** Where the server is, for messages: host, port and database, never the password. */
function describeServer(connectionString: string | undefined): string {
  if (connectionString === undefined) return "";
  try {
    const url = new URL(connectionString);
    const host = url.searchParams.get("host") ?? url.host;
    return `${host}${url.pathname} `;
  } catch {
    return "";
  }
}

/** An error the server answered with (a SQLSTATE), as opposed to a connection that failed. */
function isServerError(error: unknown): boolean {
  const e = error as { code?: unknown; severity?: unknown } | null;
  return typeof e?.code === "string" && /^[0-9A-Z]{5}$/.test(e.code) && typeof e.severity === "string";
}

/** FATAL and PANIC end the session (the server killed it, shut down or crashed): the connection is gone. */
function isFatal(error: unknown): boolean {
  const severity = (error as { severity?: unknown } | null)?.severity;
  return severity === "FATAL" || severity === "PANIC";
}

function isAbort(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === "AbortError";
}

/**
 * node-postgres marks a client whose connection failed or ended (the same fields pg-pool reads to
 * drop one): a statement sent on it would fail without reaching the server.
 */
function queryable(client: PoolClient): boolean {
  const c = client as unknown as { _queryable?: boolean; _ending?: boolean };
  return c._queryable !== false && c._ending !== true;
}

function messageOf(error: unknown): string {
  if (error === ABORTED) return "aborted";
  return error instanceof Error ? error.message : String(error);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(messageOf(error));
}

class CallTimeout extends Error {
  override name = "CallTimeout";
}

const ABORTED: unique symbol = Symbol("aborted");

/**
 * `promise`, or a rejection with ABORTED as soon as `signal` aborts; a value that arrives after the
 * abort goes to `lost` (a pool connection is given back).
 */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined, lost?: (late: T) => void): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      reject(ABORTED);
      promise.then(
        (late) => lost?.(late),
        () => undefined,
      );
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        if (signal.aborted) return;
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** The newest value put, taken once; `take` waits for one or for the signal. */
class Mailbox<T> {
  private value: { v: T } | undefined;
  private waiter: (() => void) | undefined;

  put(value: T): void {
    this.value = { v: value };
    this.waiter?.();
  }

  async take(signal: AbortSignal): Promise<T | typeof ABORTED> {
    while (!this.value) {
      if (signal.aborted) return ABORTED;
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener("abort", wake);
          this.waiter = undefined;
          resolve();
        };
        this.waiter = wake;
        signal.addEventListener("abort", wake, { once: true });
      });
    }
    const { v } = this.value;
    this.value = undefined;
    return v;
  }
}
