/**
 * What only the PostgreSQL store has, against the real server (test/servers/postgres.server.ts):
 * the row layout, corrupt rows, the table made on first use or by `leasehold migrate`, a role
 * without DDL rights, the durability settings it refuses, tables of another shape, batch reads,
 * `postgres://` URLs and `leasehold doctor`.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { postgresMigrationSql } from "../src/backends/postgres/backend.js";
import { PostgresStore } from "../src/backends/postgres/store.js";
import { examine } from "../src/cli/doctor.js";
import type { CliIo } from "../src/cli/output.js";
import { runCli } from "../src/cli/program.js";
import {
  isAmbiguous,
  LeaseConflictError,
  LeaseCorruptError,
  LeaseStoreError,
  StoreContractError,
} from "../src/errors.js";
import { openStore, parseStoreUrl } from "../src/open-store.js";
import { makeRecord, uniqueName } from "../src/testkit/store-contract.js";
import { rejection } from "./support/rejection.js";

const url = process.env.POSTGRES_URL!;
const admin = new pg.Pool({ connectionString: url, max: 2 });
const stores: PostgresStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await admin.end();
});

let tables = 0;
/** A table name of this test's own. */
const freshTable = () => `store_t${Date.now().toString(36)}_${tables++}`;
const open = (options: Partial<ConstructorParameters<typeof PostgresStore>[0]> = {}) => {
  const store = new PostgresStore({ connectionString: url, poolSize: 3, ...options });
  stores.push(store);
  return store;
};
const exists = async (table: string) =>
  (await admin.query("SELECT to_regclass($1) IS NOT NULL AS present", [table])).rows[0].present as boolean;
/** A URL for `role` (password "pw") on the test database. */
const asRole = (role: string, extra = "") => {
  const u = new URL(url);
  u.username = role;
  u.password = "pw";
  return `${u.href}${extra}`;
};

describe("postgres: the row", () => {
  it("one row per lease: the name, a revision counter from 1, and the record as one JSON document", async () => {
    const table = freshTable();
    const store = open({ table });
    const name = uniqueName();
    const record = makeRecord(name, { metadata: { addr: "10.0.0.7:8080" } });
    expect(await store.put(record, null)).toEqual({ record, revision: "1" });
    const next = makeRecord(name, { holder: null });
    expect((await store.put(next, "1")).revision).toBe("2");
    const { rows } = await admin.query(`SELECT name, rev::text AS rev, record::text AS record FROM ${table}`);
    expect(rows).toEqual([{ name, rev: "2", record: JSON.stringify(next) }]);
    // The table as the migration makes it: bytewise names, the record as json.
    const columns = await admin.query(
      "SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, c.collname FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation WHERE a.attrelid = $1::regclass AND a.attnum > 0 ORDER BY a.attnum",
      [table],
    );
    expect(columns.rows).toEqual([
      { attname: "name", type: "text", collname: "C" },
      { attname: "rev", type: "bigint", collname: null },
      { attname: "record", type: "json", collname: null },
    ]);
  });

  it("quotes and backslashes round-trip, and a NUL an older writer stored is read back as written (json, not jsonb)", async () => {
    const table = freshTable();
    const store = open({ table });
    const name = uniqueName();
    const record = makeRecord(name, { metadata: { quote: '"\\' } });
    await store.put(record, null);
    expect((await store.get(name))?.record).toEqual(record);
    // Today's writers refuse control characters in metadata; a record written before may hold one.
    const older = uniqueName();
    const withNul = makeRecord(older, { metadata: { raw: "a\u0000b" } });
    await admin.query(`INSERT INTO ${table} (name, rev, record) VALUES ($1, 1, $2)`, [older, JSON.stringify(withNul)]);
    expect((await store.get(older))?.record).toEqual(withNul);
  });

  it.each([
    ["JSON of another shape", JSON.stringify({ hello: "world" }), "1"],
    ["a record naming another lease", JSON.stringify(makeRecord("someone-else")), "1"],
  ])(
    "%s is a LeaseCorruptError on read, in a batch and on a create, and is never overwritten",
    async (_label, json, rev) => {
      const table = freshTable();
      const store = open({ table });
      await store.get("warm-up"); // makes the table
      const name = uniqueName();
      await admin.query(`INSERT INTO ${table} (name, rev, record) VALUES ($1, $2, $3)`, [name, rev, json]);
      for (const read of [store.get(name), store.getMany([name])]) {
        const error = await rejection(read);
        expect(error).toBeInstanceOf(LeaseCorruptError);
        expect((error as LeaseCorruptError).lease).toBe(name);
      }
      expect(await rejection(store.put(makeRecord(name), null))).toBeInstanceOf(LeaseCorruptError);
      const { rows } = await admin.query(
        `SELECT rev::text AS rev, record::text AS record FROM ${table} WHERE name = $1`,
        [name],
      );
      expect(rows).toEqual([{ rev, record: json }]);
    },
  );

  it("a conflict carries the row as it stands, read after the write that won", async () => {
    const store = open({ table: freshTable() });
    const name = uniqueName();
    const first = await store.put(makeRecord(name), null);
    const theirs = await store.put(makeRecord(name, { holder: "bob", term: 2 }), first.revision);
    const error = await rejection(store.put(makeRecord(name, { renewedAt: 5 }), first.revision));
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).current).toEqual(theirs);
  });

  it("getMany reads more names than one statement takes (500), in the order asked", async () => {
    const table = freshTable();
    const store = open({ table });
    await store.get("warm-up"); // makes the table
    const root = uniqueName("many");
    const names = Array.from({ length: 1203 }, (_, i) => `${root}/n${String(i).padStart(4, "0")}`);
    const written = names.filter((_, i) => i % 3 === 0).map((n) => makeRecord(n));
    await admin.query(
      `INSERT INTO ${table} (name, rev, record) SELECT * FROM unnest($1::text[], $2::bigint[], $3::json[])`,
      [written.map((r) => r.name), written.map(() => 1), written.map((r) => JSON.stringify(r))],
    );
    const byName = new Map(written.map((r) => [r.name, r.writeId]));
    const asked = [...names].reverse();
    const read = await store.getMany(asked);
    expect(read.map((s) => s?.record.writeId ?? null)).toEqual(asked.map((n) => byName.get(n) ?? null));
  });
});

describe("postgres: the table", () => {
  it("is made on first use, once, when many stores start at the same moment", async () => {
    const table = freshTable();
    const many = Array.from({ length: 6 }, () => open({ table }));
    const name = uniqueName();
    const outcomes = await Promise.allSettled(many.map((s) => s.put(makeRecord(name), null)));
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(LeaseConflictError);
    expect(await exists(table)).toBe(true);
  });

  it("with createTable: false a missing table is an error naming `leasehold migrate`, and nothing is made", async () => {
    const table = freshTable();
    const store = open({ table, createTable: false });
    const error = await rejection(store.put(makeRecord(uniqueName()), null));
    expect(error).toBeInstanceOf(LeaseStoreError);
    expect(isAmbiguous(error)).toBe(false);
    expect((error as Error).message).toContain("leasehold migrate");
    expect(await exists(table)).toBe(false);
    // The same store works once the table is there.
    expect(await store.migrate()).toBe("created");
    expect(await open({ table }).migrate()).toBe("present");
    await store.put(makeRecord(uniqueName()), null);
  });

  it("a role without DDL rights uses a migrated table with SELECT, INSERT and UPDATE only (push included)", async () => {
    const table = freshTable();
    const role = `app_${table}`;
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw'`);
    // Before the migration it cannot make the table (PostgreSQL 15: no CREATE on schema public).
    const early = await rejection(open({ connectionString: asRole(role), table }).get("x"));
    expect(early).toBeInstanceOf(LeaseStoreError);
    expect((early as Error).message).toMatch(/permission denied/);
    expect(await exists(table)).toBe(false);
    // The migration, as an owner, then the grants docs/postgres.md shows.
    expect(await open({ table }).migrate()).toBe("created");
    await admin.query(`GRANT SELECT, INSERT, UPDATE ON ${table} TO ${role}`);
    const app = open({ connectionString: asRole(role), table });
    const name = uniqueName();
    // Its watch LISTENs and sees each change (a watch yields the newest state: wait for each).
    const changes: Array<string | null> = [];
    const stop = new AbortController();
    const watching = (async () => {
      for await (const s of app.watch!(name, stop.signal)) changes.push(s === null ? "none" : s.record.holder);
    })();
    await expect.poll(() => changes).toEqual(["none"]);
    const first = await app.put(makeRecord(name), null);
    await expect.poll(() => changes).toEqual(["none", "alice"]);
    await app.put(makeRecord(name, { holder: null }), first.revision);
    await expect.poll(() => changes).toEqual(["none", "alice", null]);
    stop.abort();
    await watching;
    const client = await admin.connect();
    try {
      await client.query(`SET ROLE ${role}`);
      expect(String(await rejection(client.query(`DELETE FROM ${table}`)))).toMatch(/permission denied/);
    } finally {
      await client.query("RESET ROLE");
      client.release();
    }
  });

  it("a table of another shape is refused, naming the column, and nothing is written", async () => {
    const cases: Array<[string, string]> = [
      [
        'name text COLLATE "und-x-icu" PRIMARY KEY, rev bigint NOT NULL, record json NOT NULL',
        '"name" must be text COLLATE "C"',
      ],
      ["name text PRIMARY KEY, rev integer NOT NULL, record json NOT NULL", '"rev" must be bigint'],
      ["name text PRIMARY KEY, rev bigint NOT NULL, record text NOT NULL", '"record" must be json'],
      ["id text PRIMARY KEY, body text", '"name" must be text COLLATE "C" (is missing)'],
    ];
    for (const [columns, message] of cases) {
      const table = freshTable();
      await admin.query(`CREATE TABLE ${table} (${columns})`);
      const error = await rejection(open({ table }).put(makeRecord(uniqueName()), null));
      expect(error).toBeInstanceOf(StoreContractError);
      expect((error as Error).message).toContain(message);
      expect((await admin.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n).toBe(0);
    }
    // A plain `text` name in a database whose own collation sorts bytewise (this one's is C) is fine.
    const table = freshTable();
    await admin.query(`CREATE TABLE ${table} (name text PRIMARY KEY, rev bigint NOT NULL, record jsonb NOT NULL)`);
    const store = open({ table });
    const stored = await store.put(makeRecord(uniqueName()), null);
    expect(await store.get(stored.record.name)).toEqual(stored);
  });

  it("in a schema of its own, as the URL names it", async () => {
    const schema = `ops_${Date.now().toString(36)}`;
    await admin.query(`CREATE SCHEMA ${schema}`);
    const store = await openStore(`${url}?schema=${schema}&table=leases&pool=2`);
    stores.push(store as PostgresStore);
    await store.put(makeRecord("a"), null);
    expect(await exists(`${schema}.leases`)).toBe(true);
    expect((store as PostgresStore).table).toBe(`"${schema}"."leases"`);
  });
});

describe("postgres: durability settings", () => {
  it("synchronous_commit other than on is refused before anything is written (for a role, or in the URL)", async () => {
    const table = freshTable();
    const role = `async_${table}`;
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw'; ALTER ROLE ${role} SET synchronous_commit = off`);
    await admin.query(
      `CREATE TABLE ${table} (name text COLLATE "C" PRIMARY KEY, rev bigint NOT NULL, record json NOT NULL)`,
    );
    await admin.query(`GRANT SELECT, INSERT, UPDATE ON ${table} TO ${role}`);
    for (const [connectionString, value] of [
      [asRole(role), "off"],
      [`${url}?options=${encodeURIComponent("-c synchronous_commit=local")}`, "local"],
    ] as const) {
      const error = await rejection(open({ connectionString, table }).put(makeRecord(uniqueName()), null));
      expect(error).toBeInstanceOf(StoreContractError);
      expect((error as Error).message).toContain(`synchronous_commit is "${value}"`);
    }
    expect((await admin.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n).toBe(0);
    // remote_apply waits for more than on does: accepted.
    const stricter = `${url}?options=${encodeURIComponent("-c synchronous_commit=remote_apply")}`;
    await open({ connectionString: stricter, table }).put(makeRecord(uniqueName()), null);
  });
});

describe("postgres:// URLs", () => {
  it("describe the store: leasehold's own parameters taken out, libpq's kept", () => {
    expect(
      parseStoreUrl("postgres://app:s%40cret@db.internal:6543/leases_db?sslmode=require&table=locks&schema=ops&pool=4"),
    ).toEqual({
      kind: "postgres",
      connectionString: "postgres://app:s%40cret@db.internal:6543/leases_db?sslmode=require",
      table: "locks",
      schema: "ops",
      poolSize: 4,
    });
    expect(parseStoreUrl("postgresql://db/app")).toEqual({ kind: "postgres", connectionString: "postgresql://db/app" });
    expect(parseStoreUrl("postgres://db/app?push=off")).toEqual({
      kind: "postgres",
      connectionString: "postgres://db/app",
      push: false,
    });
    expect(parseStoreUrl("postgres://app@localhost/app?host=/var/run/postgresql")).toMatchObject({
      connectionString: "postgres://app@localhost/app?host=/var/run/postgresql",
    });
  });

  it.each([
    ["postgres://db/app?colour=red", 'query parameter "colour": not understood by postgres: URLs'],
    ["postgres://db/app?table=Leases", 'query parameter "table": expected 1-63 lower-case letters'],
    ["postgres://db/app?pool=0", 'query parameter "pool": expected at least 1 connection'],
    ["postgres://db/app?pool=many", 'query parameter "pool": expected a number of connections'],
    ["postgres://db/a/b", "postgres database: expected one database name"],
    ["postgres://db/app?push=no", 'query parameter "push": expected "on" or "off"'],
    ["postgres:///app", "postgres host: expected postgres://USER@HOST"],
    ["postgres://db/app#x", "fragment"],
  ])("%s is refused naming the part", (text, message) => {
    expect(() => parseStoreUrl(text)).toThrow(message);
  });

  it("the password comes from PGPASSWORD when the URL has none", async () => {
    const u = new URL(url);
    const password = u.password;
    u.password = "";
    const store = await openStore(`${u.href}?table=${freshTable()}&pool=1`, { env: { PGPASSWORD: password } });
    stores.push(store as PostgresStore);
    expect(await store.get("x")).toBeNull();
    const without = await openStore(`${u.href}?table=${freshTable()}&pool=1`, { env: {} });
    stores.push(without as PostgresStore);
    const error = await rejection(without.get("x"));
    expect(error).toBeInstanceOf(LeaseStoreError);
    // Messages name the server and table, never a password.
    expect((error as Error).message).not.toContain(password);
  });

  it("a caller's own pool: used and never ended", async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const store = await openStore(`postgres://ignored/app?table=${freshTable()}`, { client: pool });
    await store.put(makeRecord("mine"), null);
    await store.close?.();
    expect((await pool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    await pool.end();
    expect(() => new PostgresStore({ pool, poolSize: 3 })).toThrow(
      "poolSize: only applies to the pool the store creates",
    );
    expect(() => new PostgresStore({ table: "x" })).toThrow("expected exactly one of connectionString and pool");
  });
});

describe("leasehold migrate and doctor on postgres://", () => {
  const io = () => {
    const out: string[] = [];
    const err: string[] = [];
    const cli: CliIo = { env: {}, out: (l) => out.push(l), say: (l) => err.push(l) };
    return { cli, out, err };
  };

  it("migrate --print prints the SQL the store runs, connecting to nothing; migrate makes the table", async () => {
    const table = freshTable();
    const printed = io();
    expect(
      await runCli(["migrate", "--print", `postgres://nowhere.invalid/app?table=${table}&schema=ops`], printed.cli),
    ).toBe(0);
    expect(printed.out.join("\n")).toBe(postgresMigrationSql({ table, schema: "ops" }));
    const run = io();
    expect(await runCli(["migrate", `${url}?table=${table}`], run.cli)).toBe(0);
    expect(run.err.join("\n")).toContain("created the lease table");
    expect(await exists(table)).toBe(true);
    const again = io();
    expect(await runCli(["migrate", `${url}?table=${table}`], again.cli)).toBe(0);
    expect(again.err.join("\n")).toContain("already there");
    const sqlite = io();
    expect(await runCli(["migrate", "sqlite::memory:"], sqlite.cli)).toBe(2);
    expect(sqlite.err.join("\n")).toContain("the sqlite store needs no migration");
  });

  it("docs/postgres.md shows the SQL the store and migrate run", () => {
    const doc = readFileSync(join(import.meta.dirname, "..", "docs", "postgres.md"), "utf8");
    expect(doc).toContain(`\`\`\`sql\n${postgresMigrationSql({ table: "leasehold_leases" })}\n\`\`\``);
  });

  it("doctor: every check passes", async () => {
    const target = `${url}?table=${freshTable()}`;
    const store = await openStore(target);
    try {
      const report = await examine(store, { store: target, scratch: "leasehold-doctor/pg/", rounds: 5, writers: 10 });
      expect(report.cases.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`)).toEqual([]);
      expect(report.leftReleased).toBeGreaterThan(0);
    } finally {
      await store.close?.();
    }
  });
});
