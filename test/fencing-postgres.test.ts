/**
 * docs/fencing.md, PostgreSQL, against the real server (test/servers/postgres.server.ts): the
 * recipes (examples/fencing/postgres.ts), `fencedUpdate` (a fence column on the row) and
 * `fenceTransaction` (a fence table for a whole transaction), src/fencing/postgres.ts. A deposed
 * leader's late write is refused, and a new leader's first write wins, also when the old leader's
 * transaction holds the row as it arrives.
 */
import pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { replaceDay, saveReport, saveReportWithHelper } from "../examples/fencing/postgres.js";
import { LeaseValidationError } from "../src/errors.js";
import {
  FenceCorruptError,
  fencedUpdate,
  fenceTableSql,
  fenceTransaction,
  StaleTermError,
} from "../src/fencing/postgres.js";
import { deposedLeaderWrites } from "./support/deposed-leader.js";
import { rejection } from "./support/rejection.js";

// A schema of this file's own, first on the search path, so the recipes' table names are ours.
const schema = `fencing_${Date.now().toString(36)}`;
const url = new URL(process.env.POSTGRES_URL!);
url.searchParams.set("options", `-c search_path=${schema}`);
url.searchParams.set("application_name", "fencing-test");
const pool = new pg.Pool({ connectionString: url.href, max: 6 });

beforeAll(async () => {
  await pool.query(`CREATE SCHEMA ${schema}`);
});
afterAll(async () => {
  await pool.query(`DROP SCHEMA ${schema} CASCADE`);
  await pool.end();
});
beforeEach(async () => {
  await pool.query(`
    DROP TABLE IF EXISTS reports, report_log, report_lines, leasehold_fences, "odd ""table""";
    CREATE TABLE reports (id text PRIMARY KEY, body text NOT NULL, term bigint NOT NULL);
    CREATE TABLE report_log (id text, term bigint);
    CREATE TABLE report_lines (day text, line text);
    ${fenceTableSql()}
  `);
});

/** This file's connections waiting for a lock. */
const WAITING =
  "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = 'fencing-test'";

const row = async (id: string) =>
  (await pool.query("SELECT id, body, term::int FROM reports WHERE id = $1", [id])).rows[0];

/** A transaction on a client of its own: `run` inside BEGIN, then COMMIT on `commit()` or ROLLBACK. */
async function transaction() {
  const client = await pool.connect();
  await client.query("BEGIN");
  return {
    client,
    commit: async () => {
      await client.query("COMMIT");
      client.release();
    },
    rollback: async () => {
      await client.query("ROLLBACK");
      client.release();
    },
  };
}

describe("PostgreSQL recipes (examples/fencing/postgres.ts)", () => {
  it("upsert: inserts, lets a newer term overwrite, refuses an older one (no row changed)", async () => {
    expect(await saveReport(pool, "daily", "by term 1", 1)).toBe(true);
    expect(await saveReport(pool, "daily", "by term 2", 2)).toBe(true);
    expect(await saveReport(pool, "daily", "late, by term 1", 1)).toBe(false);
    expect(await row("daily")).toEqual({ id: "daily", body: "by term 2", term: 2 });
    expect(await saveReport(pool, "daily", "again by term 2", 2)).toBe(true);
  });

  it("with terms from the library: the deposed leader's write is StaleTermError naming the newer term, and its transaction rolls back", async () => {
    const outcome = await deposedLeaderWrites((writer, term) =>
      saveReportWithHelper(pool, "daily", `by ${writer}`, term),
    );
    expect(outcome).toMatchObject({ oldTerm: 1, newTerm: 2, oldSignalAborted: true });
    expect(outcome.staleError).toBeInstanceOf(StaleTermError);
    expect(outcome.staleError).toMatchObject({ term: 1, seenTerm: 2 });
    expect((outcome.staleError as Error).message).toBe(
      `fenced write to table "reports" row {"id":"daily"} refused: it holds term 2, newer than this writer's term 1; a newer leader exists, so stop acting as leader`,
    );
    expect(await row("daily")).toEqual({ id: "daily", body: "by new", term: 2 });
    // The old leader's log line went with its refused write; the two accepted writes logged theirs.
    expect((await pool.query("SELECT term::int FROM report_log ORDER BY term")).rows).toEqual([
      { term: 1 },
      { term: 2 },
    ]);
  });

  it("a fence table: a deposed leader's whole transaction is refused; the newer one's stands", async () => {
    await replaceDay(pool, "2026-12-05", ["a", "b"], 2);
    const error = await rejection(replaceDay(pool, "2026-12-05", ["late"], 1));
    expect(error).toBeInstanceOf(StaleTermError);
    expect(error).toMatchObject({ term: 1, seenTerm: 2 });
    expect((await pool.query("SELECT line FROM report_lines ORDER BY line")).rows).toEqual([
      { line: "a" },
      { line: "b" },
    ]);
    await replaceDay(pool, "2026-12-05", ["c"], 3);
    expect((await pool.query("SELECT line FROM report_lines")).rows).toEqual([{ line: "c" }]);
  });
});

describe("a new leader's first write wins", () => {
  it("fencedUpdate: when the old leader's transaction holds the row, the new one waits for it, then writes over it", async () => {
    await saveReport(pool, "daily", "by 1", 1);
    const old = await transaction();
    await fencedUpdate(old.client, { table: "reports", key: { id: "daily" }, set: { body: "old, late" }, term: 1 });
    const newer = fencedUpdate(pool, { table: "reports", key: { id: "daily" }, set: { body: "new" }, term: 2 });
    // It waits on the row lock the old transaction holds.
    await expect.poll(async () => (await pool.query(WAITING)).rows[0].n).toBe(1);
    await old.commit();
    expect(await newer).toBe("written");
    expect(await row("daily")).toEqual({ id: "daily", body: "new", term: 2 });
    // And the old leader's next write is refused.
    expect(
      await rejection(fencedUpdate(pool, { table: "reports", key: { id: "daily" }, set: { body: "x" }, term: 1 })),
    ).toBeInstanceOf(StaleTermError);
  });

  it("fenceTransaction: the newer leader's transaction waits at its fence for the old one to finish, then wins", async () => {
    const old = await transaction();
    await fenceTransaction(old.client, { resource: "reports/day", term: 1 });
    await old.client.query("INSERT INTO report_lines (day, line) VALUES ('day', 'old')");
    const newer = (async () => {
      const t = await transaction();
      await fenceTransaction(t.client, { resource: "reports/day", term: 2 });
      await t.client.query("DELETE FROM report_lines WHERE day = 'day'");
      await t.client.query("INSERT INTO report_lines (day, line) VALUES ('day', 'new')");
      await t.commit();
    })();
    await expect.poll(async () => (await pool.query(WAITING)).rows[0].n).toBe(1);
    await old.commit();
    await newer;
    expect((await pool.query("SELECT line FROM report_lines")).rows).toEqual([{ line: "new" }]);
    // The old leader's next transaction is refused at its fence.
    const late = await transaction();
    expect(await rejection(fenceTransaction(late.client, { resource: "reports/day", term: 1 }))).toMatchObject({
      name: "StaleTermError",
      seenTerm: 2,
    });
    await late.rollback();
  });
});

describe("fencedUpdate", () => {
  it("upserts by a composite key, with the fence in a column of your choice; refuses older terms", async () => {
    await pool.query(
      `CREATE TABLE "odd ""table""" (tenant text, "key" int, payload bytea, n bigint, fence bigint, PRIMARY KEY (tenant, "key"))`,
    );
    const table = 'odd "table"';
    const write = (term: number, n: number | bigint) =>
      fencedUpdate(pool, {
        table,
        key: { tenant: "acme", key: 7 },
        set: { payload: Buffer.from([1, 2, term]), n },
        term,
        termColumn: "fence",
      });
    expect(await write(1, 10)).toBe("written");
    expect(await write(3, 30n)).toBe("written");
    expect(await rejection(write(2, 20))).toMatchObject({ name: "StaleTermError", term: 2, seenTerm: 3 });
    expect((await pool.query(`SELECT tenant, "key", payload, n::int, fence::int FROM "odd ""table"""`)).rows).toEqual([
      { tenant: "acme", key: 7, payload: Buffer.from([1, 2, 3]), n: 30, fence: 3 },
    ]);
  });

  it("a row without a term yet (NULL) is taken by any term; insertIfAbsent: false reports an absent row", async () => {
    await pool.query("ALTER TABLE reports ALTER COLUMN term DROP NOT NULL");
    await pool.query("INSERT INTO reports (id, body, term) VALUES ('daily', 'legacy', NULL)");
    const update = (id: string, term: number) =>
      fencedUpdate(pool, { table: "reports", key: { id }, set: { body: `by ${term}` }, term, insertIfAbsent: false });
    expect(await update("daily", 1)).toBe("written");
    expect(await update("weekly", 1)).toBe("absent");
    expect(await update("daily", 1)).toBe("written"); // the same term again: allowed
    expect(await row("daily")).toEqual({ id: "daily", body: "by 1", term: 1 });
  });

  it("an empty set only moves the fence up: a new leader claims a row before anything else", async () => {
    await saveReport(pool, "daily", "by 1", 1);
    expect(
      await fencedUpdate(pool, { table: "reports", key: { id: "daily" }, set: {}, term: 2, insertIfAbsent: false }),
    ).toBe("written");
    expect(await saveReport(pool, "daily", "late, by 1", 1)).toBe(false);
    expect(await row("daily")).toEqual({ id: "daily", body: "by 1", term: 2 });
  });

  it("terms compare as numbers whatever the column's type; one that is not a whole number is FenceCorruptError", async () => {
    await pool.query("CREATE TABLE texty (id text PRIMARY KEY, body text, term text)");
    await pool.query("INSERT INTO texty VALUES ('a', 'by 10', '10')");
    // As text "9" > "10": the fence must not let term 9 through.
    expect(
      await rejection(fencedUpdate(pool, { table: "texty", key: { id: "a" }, set: { body: "x" }, term: 9 })),
    ).toMatchObject({
      name: "StaleTermError",
      seenTerm: 10,
    });
    await pool.query("CREATE TABLE decimal_fence (id text PRIMARY KEY, term numeric)");
    await pool.query("INSERT INTO decimal_fence VALUES ('a', 10.5)");
    const error = await rejection(fencedUpdate(pool, { table: "decimal_fence", key: { id: "a" }, set: {}, term: 9 }));
    expect(error).toBeInstanceOf(FenceCorruptError);
    expect((await pool.query("SELECT term::text FROM decimal_fence")).rows).toEqual([{ term: "10.5" }]);
    await pool.query("DROP TABLE texty, decimal_fence");
  });

  it("rejects bad options naming the field, and sends nothing", async () => {
    await saveReport(pool, "daily", "by 2", 2);
    const cases: Array<[unknown, string]> = [
      [{ table: "reports", key: { id: "daily" }, set: { body: "x" }, term: 0 }, "term: expected a term >= 1"],
      [{ table: "reports", key: {}, set: { body: "x" }, term: 3 }, "key: expected at least one key column"],
      [{ table: "reports", key: { id: "daily" }, set: { id: "x" }, term: 3 }, "set.id: is a key column"],
      [{ table: "reports", key: { id: "daily" }, set: { body: {} }, term: 3 }, "set.body: expected a string"],
      [
        { table: "reports", key: { id: "daily" }, set: { body: new Date(Number.NaN) }, term: 3 },
        "set.body: expected a string",
      ],
    ];
    for (const [options, message] of cases) {
      const error = await rejection(fencedUpdate(pool, options as never));
      expect(error).toBeInstanceOf(LeaseValidationError);
      expect((error as Error).message).toContain(message);
    }
    expect(await rejection(fencedUpdate({} as never, { table: "t", key: { id: 1 }, set: {}, term: 1 }))).toMatchObject({
      message: expect.stringContaining("db: expected a pg Client, PoolClient or Pool"),
    });
    expect(await row("daily")).toEqual({ id: "daily", body: "by 2", term: 2 });
  });
});

describe("fenceTransaction", () => {
  it("refuses a pool (the fence would end with its own statement) and bad options", async () => {
    expect(await rejection(fenceTransaction(pool, { resource: "r", term: 1 }))).toMatchObject({
      message: expect.stringContaining("client: expected the client of your transaction"),
    });
    const t = await transaction();
    try {
      for (const [options, message] of [
        [{ resource: "", term: 1 }, "resource: expected a non-empty resource name"],
        [{ resource: "r", term: -1 }, "term: expected a term >= 1"],
        [{ resource: "r", term: 1, colour: "red" }, "colour: unknown field"],
      ] as const) {
        const error = await rejection(fenceTransaction(t.client, options as never));
        expect(error).toBeInstanceOf(LeaseValidationError);
        expect((error as Error).message).toContain(message);
      }
    } finally {
      await t.rollback();
    }
  });
});
