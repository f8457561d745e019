/**
 * The PostgreSQL backend's declaration (./backend.ts): `postgres://` and `postgresql://` URLs (the
 * libpq form node-postgres reads: `postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=...`, plus
 * leasehold's `table`, `schema`, `pool` and `push`), the store's options, Node and Lambda (node-postgres
 * speaks TCP; a Worker would need Cloudflare's socket API, which is not tested here), the password
 * from PGPASSWORD when the URL has none, and the table's DDL, which the store runs on first use and
 * `leasehold migrate` runs or prints (docs/postgres.md). The store is src/backends/postgres/store.ts.
 * Runtime-neutral, no SDK.
 */
import type { Pool } from "pg";
import { z } from "zod";
import type { Backend, StoreModule } from "../backend.js";
import { millisecondsOption } from "../fields.js";
import * as parts from "../url.js";

export interface PostgresStoreOptions {
  /**
   * Where the database is, as node-postgres reads it: `postgres://USER:PASSWORD@HOST:PORT/DATABASE`
   * with libpq's parameters (`sslmode`, `sslrootcert`, `application_name`, `host` for a unix socket
   * folder, ...). Give this or `pool`.
   */
  connectionString?: string;
  /**
   * Your own `pg.Pool` (TLS, credentials, hooks); the store never ends it, and attaches an `error`
   * listener to it while open (a connection the server killed while idle is an event, not a crash).
   * Push holds one of its connections while any lease is watched.
   */
  pool?: Pool;
  /** Table name: lower-case letters, digits and _. Default "leasehold_leases". */
  table?: string;
  /** The table's schema. Default: the first schema of the connection's `search_path` that has it. */
  schema?: string;
  /**
   * Create the table on first use when it is missing. Default true; false for a role without DDL
   * rights (run `leasehold migrate` once as a role that has them) and for read-only uses.
   */
  createTable?: boolean;
  /** Connections of the pool this store creates, the push listener's included. Default 10. */
  poolSize?: number;
  /**
   * The longest one statement may take (ms): the server's `statement_timeout` on the connections
   * this store creates, and, one second later, the store gives up on any call itself (a dead network
   * answers nothing) and closes that connection. Default 5000.
   */
  statementTimeoutMs?: number;
  /**
   * Push: every write NOTIFYs, and `watch` LISTENs on one connection of the pool. Default true.
   * Turn it off only on every process sharing the table (docs/postgres.md "Push").
   */
  push?: boolean;
  /** While the listener's connection is lost: how often watched leases are read instead (ms). Default 1000. */
  watchPollMs?: number;
}

export const DEFAULT_TABLE = "leasehold_leases";
export const DEFAULT_POOL_SIZE = 10;
/** The channel every leasehold table notifies on; payloads name the table (./listener.ts). */
export const NOTIFY_CHANNEL = "leasehold";

const identifier = (what: string) =>
  z.string({ error: `expected a ${what} name` }).regex(/^[a-z_][a-z0-9_]{0,62}$/, {
    error: "expected 1-63 lower-case letters, digits or _, not starting with a digit",
  });
const tableName = identifier("table");
const schemaName = identifier("schema");
const poolSize = z
  .number({ error: "expected a number of connections" })
  .int({ error: "expected a whole number" })
  .min(1, { error: "expected at least 1 connection" })
  .max(1000, { error: "expected at most 1000 connections" });

const OWN_POOL_ONLY = ["poolSize", "statementTimeoutMs"] as const;

export const postgresOptionsSchema = z
  .strictObject(
    {
      connectionString: z
        .string({ error: "expected a postgres:// connection string" })
        .regex(/^postgres(ql)?:\/\//i, { error: "expected a postgres:// or postgresql:// connection string" })
        .optional(),
      pool: z
        .custom<Pool>(
          (p) =>
            typeof (p as { connect?: unknown } | null)?.connect === "function" &&
            typeof (p as { query?: unknown }).query === "function",
          { error: "expected a pg.Pool" },
        )
        .optional(),
      table: tableName.default(DEFAULT_TABLE),
      schema: schemaName.optional(),
      createTable: z.boolean({ error: "expected true or false" }).default(true),
      poolSize: poolSize.optional(),
      statementTimeoutMs: millisecondsOption(100, 600_000, "10 minutes").optional(),
      push: z.boolean({ error: "expected true or false" }).default(true),
      watchPollMs: millisecondsOption(10, 3_600_000, "1 hour").default(1000),
    },
    { error: "expected an options object with connectionString or pool" },
  )
  .superRefine((o, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    if ((o.connectionString === undefined) === (o.pool === undefined)) {
      issue("connectionString", "expected exactly one of connectionString and pool");
    }
    if (o.pool !== undefined) {
      for (const field of OWN_POOL_ONLY) {
        if (o[field] !== undefined) {
          issue(field, "only applies to the pool the store creates; configure your own pool instead");
        }
      }
    }
  });

/** The table, quoted and schema-qualified where a schema is given (names are checked: no quotes inside). */
export function qualifiedTable(o: { table: string; schema?: string | undefined }): string {
  return o.schema === undefined ? `"${o.table}"` : `"${o.schema}"."${o.table}"`;
}

/**
 * The table's DDL: one row per lease, the record as one JSON document beside its name and the
 * revision counter (so record fields added later need no migration). `name` sorts bytewise
 * (COLLATE "C"), as every store lists: the database's own collation could order "a-b" and "a/c"
 * otherwise and put names outside a prefix's range. `json`, not `jsonb`: it keeps the text as
 * written and accepts every string leasehold writes (`jsonb` refuses \u0000).
 */
export function postgresMigrationSql(o: { table: string; schema?: string | undefined }): string {
  const table = qualifiedTable(o);
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (`,
    `  name   text COLLATE "C" PRIMARY KEY,`,
    "  rev    bigint NOT NULL CHECK (rev > 0),",
    "  record json NOT NULL",
    ");",
    `COMMENT ON TABLE ${table} IS 'leasehold: one row per lease; never delete rows (terms would restart)';`,
  ].join("\n");
}

/** What a `postgres://` URL says. */
export interface PostgresUrl {
  kind: "postgres";
  /** The URL for node-postgres: leasehold's own parameters taken out. */
  connectionString: string;
  table?: string;
  schema?: string;
  poolSize?: number;
  /** `push=off`: no NOTIFY and no LISTEN (behind PgBouncer in transaction mode, say). */
  push?: false;
}

/** libpq parameters node-postgres understands and passes on. */
const DRIVER_PARAMS = [
  "sslmode",
  "sslrootcert",
  "sslcert",
  "sslkey",
  "application_name",
  "host",
  "port",
  "options",
  "uselibpqcompat",
];
/** leasehold's own parameters. */
const OWN_PARAMS = ["table", "schema", "pool", "push"];

export const postgresBackend: Backend<PostgresUrl> = {
  kind: "postgres",
  schemes: ["postgres", "postgresql"],
  forms: [
    "postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE?table=TABLE&schema=SCHEMA&pool=N&push=off&sslmode=MODE (password also from PGPASSWORD; postgresql:// too)",
  ],
  options: postgresOptionsSchema,
  runtimes: {
    node: true,
    lambda: true,
    workers:
      "node-postgres would need Cloudflare's TCP sockets (and Hyperdrive for pooling), which this build does not test; use dynamodb:// or Durable Objects there",
  },
  env: { PGPASSWORD: z.string() },
  parse(text) {
    const scheme = text.slice(0, text.indexOf(":")).toLowerCase();
    const url = parts.host(text, scheme, `${scheme}://USER@HOST/DATABASE`, null);
    const params = parts.query(url, scheme, [...DRIVER_PARAMS, ...OWN_PARAMS]);
    if (url.hostname === "" && params.get("host") === undefined) {
      throw parts.invalid("postgres host", `expected ${scheme}://USER@HOST[:PORT]/DATABASE (or ?host=/socket/folder)`);
    }
    const database = url.pathname.replace(/^\//, "");
    if (database.includes("/")) {
      throw parts.invalid(
        "postgres database",
        `expected one database name after the host, got ${JSON.stringify(database)}`,
      );
    }
    const table = params.get("table");
    if (table !== undefined) parts.check(tableName, table, 'query parameter "table"');
    const schema = params.get("schema");
    if (schema !== undefined) parts.check(schemaName, schema, 'query parameter "schema"');
    const pool = params.get("pool");
    if (pool !== undefined) {
      if (!/^[0-9]{1,4}$/.test(pool))
        throw parts.invalid('query parameter "pool"', `expected a number of connections, got ${JSON.stringify(pool)}`);
      parts.check(poolSize, Number(pool), 'query parameter "pool"', pool);
    }
    // Only when present: deleting re-encodes the whole query (a socket folder's "/" as %2F, equal to libpq).
    const push = params.get("push");
    if (push !== undefined && push !== "on" && push !== "off") {
      throw parts.invalid('query parameter "push"', `expected "on" or "off", got ${JSON.stringify(push)}`);
    }
    for (const own of OWN_PARAMS) if (url.searchParams.has(own)) url.searchParams.delete(own);
    return {
      kind: "postgres",
      connectionString: url.href,
      ...parts.defined({ table, schema, poolSize: pool === undefined ? undefined : Number(pool) }),
      ...(push === "off" ? { push: false as const } : {}),
    };
  },
  module: "./backends/postgres/store.js",
  open(spec, { env, create, client, module }) {
    const { PostgresStore } = module as StoreModule<"PostgresStore", PostgresStoreOptions>;
    const table = parts.defined({ table: spec.table, schema: spec.schema });
    const creates = { ...(create ? {} : { createTable: false }), ...(spec.push === false ? { push: false } : {}) };
    if (client !== undefined) return new PostgresStore({ pool: client as Pool, ...table, ...creates });
    return new PostgresStore({
      connectionString: withPassword(spec.connectionString, env.PGPASSWORD),
      ...table,
      ...parts.defined({ poolSize: spec.poolSize }),
      ...creates,
    });
  },
  migration: (spec) =>
    postgresMigrationSql(
      parts.defined({ table: spec.table ?? DEFAULT_TABLE, schema: spec.schema }) as { table: string },
    ),
};

/** The URL with PGPASSWORD as its password when it names none (node-postgres lets a URL's empty password win). */
function withPassword(connectionString: string, password: string | undefined): string {
  if (password === undefined || password === "") return connectionString;
  const url = new URL(connectionString);
  if (url.password !== "" || url.username === "") return connectionString;
  url.password = encodeURIComponent(password);
  return url.href;
}
