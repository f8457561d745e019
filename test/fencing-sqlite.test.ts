/**
 * docs/fencing.md, SQL, on SQLite (better-sqlite3, a temporary file): the recipes
 * (examples/fencing/sqlite.ts) and `fencedUpdate` (src/fencing/sqlite.ts). Each shows a stale
 * leader's write refused after a newer term wrote, an equal term allowed, and what the caller sees.
 * The same with real processes and SIGSTOP: fencing-processes.test.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { saveReport, saveReportWithHelper, updateReport } from "../examples/fencing/sqlite.js";
import { LeaseValidationError } from "../src/errors.js";
import { FenceCorruptError, fencedUpdate, StaleTermError } from "../src/fencing/sqlite.js";
import { deposedLeaderWrites } from "./support/deposed-leader.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-fencing-sqlite-"));
const db = new Database(join(dir, "downstream.db"));
db.pragma("journal_mode = WAL");
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  db.exec(`
    DROP TABLE IF EXISTS reports;
    CREATE TABLE reports (id TEXT PRIMARY KEY, body TEXT NOT NULL, term INTEGER NOT NULL);
  `);
});

const row = (id: string) => db.prepare("SELECT id, body, term FROM reports WHERE id = ?").get(id);

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected an error");
}

describe("SQL recipes (examples/fencing/sqlite.ts)", () => {
  it("upsert: inserts, lets a newer term overwrite, refuses an older one (0 rows changed)", () => {
    expect(saveReport(db, "daily", "by term 1", 1)).toBe(true);
    expect(saveReport(db, "daily", "by term 2", 2)).toBe(true);
    expect(saveReport(db, "daily", "late, by term 1", 1)).toBe(false);
    expect(row("daily")).toEqual({ id: "daily", body: "by term 2", term: 2 });
    expect(saveReport(db, "daily", "again by term 2", 2)).toBe(true);
    expect(row("daily")).toEqual({ id: "daily", body: "again by term 2", term: 2 });
  });

  it("plain UPDATE: tells a refusal from a missing row", () => {
    expect(updateReport(db, "daily", "by term 1", 1)).toBe("absent");
    saveReport(db, "daily", "by term 2", 2);
    expect(updateReport(db, "daily", "late, by term 1", 1)).toBe("refused");
    expect(updateReport(db, "daily", "by term 2 again", 2)).toBe("written");
    expect(updateReport(db, "daily", "by term 3", 3)).toBe("written");
    expect(row("daily")).toEqual({ id: "daily", body: "by term 3", term: 3 });
  });

  it("with terms from the library: the deposed leader's write is StaleTermError with the new term", async () => {
    const outcome = await deposedLeaderWrites((writer, term) =>
      saveReportWithHelper(db, "daily", `by ${writer}`, term),
    );
    expect(outcome).toMatchObject({ oldTerm: 1, newTerm: 2, oldSignalAborted: true });
    expect(outcome.staleError).toBeInstanceOf(StaleTermError);
    expect(outcome.staleError).toMatchObject({ term: 1, seenTerm: 2 });
    expect((outcome.staleError as Error).message).toBe(
      `fenced write to table "reports" row {"id":"daily"} refused: it holds term 2, newer than this writer's term 1; a newer leader exists, so stop acting as leader`,
    );
    expect(row("daily")).toEqual({ id: "daily", body: "by new", term: 2 });
  });
});

describe("fencedUpdate", () => {
  it("upserts by a composite key, with the fence in a column of your choice; refuses older terms", () => {
    db.exec(`
      DROP TABLE IF EXISTS "odd ""table""";
      CREATE TABLE "odd ""table""" (tenant TEXT, "key" INTEGER, payload BLOB, n INTEGER, fence INTEGER,
        PRIMARY KEY (tenant, "key"));
    `);
    const table = 'odd "table"';
    const write = (term: number, n: number | bigint) =>
      fencedUpdate(db, {
        table,
        key: { tenant: "acme", key: 7 },
        set: { payload: Buffer.from([1, 2, term]), n },
        term,
        termColumn: "fence",
      });
    expect(write(1, 10)).toBe("written");
    expect(write(3, 30n)).toBe("written");
    const error = thrown(() => write(2, 20));
    expect(error).toMatchObject({ name: "StaleTermError", term: 2, seenTerm: 3 });
    expect(error).toBeInstanceOf(StaleTermError);
    expect(db.prepare(`SELECT * FROM "odd ""table"""`).all()).toEqual([
      { tenant: "acme", key: 7, payload: Buffer.from([1, 2, 3]), n: 30, fence: 3 },
    ]);
    // Another row of the same table is another resource with its own fence.
    expect(
      fencedUpdate(db, { table, key: { tenant: "acme", key: 8 }, set: { n: 1 }, term: 1, termColumn: "fence" }),
    ).toBe("written");
  });

  it("a row without a term yet (NULL, written before fencing) is taken by any term", () => {
    db.exec("DROP TABLE reports; CREATE TABLE reports (id TEXT PRIMARY KEY, body TEXT, term INTEGER)");
    db.prepare("INSERT INTO reports (id, body, term) VALUES ('daily', 'legacy', NULL)").run();
    expect(fencedUpdate(db, { table: "reports", key: { id: "daily" }, set: { body: "by 1" }, term: 1 })).toBe(
      "written",
    );
    expect(row("daily")).toEqual({ id: "daily", body: "by 1", term: 1 });
  });

  it("insertIfAbsent: false updates existing rows only and reports an absent one", () => {
    const update = (term: number) =>
      fencedUpdate(db, {
        table: "reports",
        key: { id: "daily" },
        set: { body: `by ${term}` },
        term,
        insertIfAbsent: false,
      });
    expect(update(1)).toBe("absent");
    expect(row("daily")).toBeUndefined();
    saveReport(db, "daily", "by 2", 2);
    expect(thrown(() => update(1))).toMatchObject({ name: "StaleTermError", seenTerm: 2 });
    expect(update(2)).toBe("written");
    expect(update(5)).toBe("written");
    expect(row("daily")).toEqual({ id: "daily", body: "by 5", term: 5 });
  });

  it("an empty set only moves the fence up: a new leader claims a row before anything else", () => {
    saveReport(db, "daily", "by 1", 1);
    // An insert must give every NOT NULL column, so a claim updates existing rows only.
    const claim = { table: "reports", key: { id: "daily" }, set: {}, term: 2, insertIfAbsent: false };
    expect(fencedUpdate(db, claim)).toBe("written");
    expect(saveReport(db, "daily", "late, by 1", 1)).toBe(false);
    expect(row("daily")).toEqual({ id: "daily", body: "by 1", term: 2 });
  });

  it("inside your own transaction: a refusal rolls back your other writes with it", () => {
    saveReport(db, "daily", "by 2", 2);
    db.exec("CREATE TABLE audit (line TEXT)");
    const batch = db.transaction((term: number) => {
      db.prepare("INSERT INTO audit (line) VALUES (?)").run(`term ${term}`);
      fencedUpdate(db, { table: "reports", key: { id: "daily" }, set: { body: `by ${term}` }, term });
    });
    expect(thrown(() => batch(1))).toBeInstanceOf(StaleTermError);
    expect(db.prepare("SELECT line FROM audit").all()).toEqual([]);
    batch(3);
    expect(db.prepare("SELECT line FROM audit").all()).toEqual([{ line: "term 3" }]);
    expect(row("daily")).toEqual({ id: "daily", body: "by 3", term: 3 });
    db.exec("DROP TABLE audit");
  });

  it("a fence column holding something other than a whole number is FenceCorruptError, never overwritten", () => {
    db.exec("DROP TABLE reports; CREATE TABLE reports (id TEXT PRIMARY KEY, body TEXT, term)");
    db.prepare("INSERT INTO reports (id, body, term) VALUES ('daily', 'odd', 'seven')").run();
    const error = thrown(() =>
      fencedUpdate(db, { table: "reports", key: { id: "daily" }, set: { body: "x" }, term: 9 }),
    );
    expect(error).toBeInstanceOf(FenceCorruptError);
    expect((error as Error).message).toContain('its stored fence "seven" is not a term');
    expect(row("daily")).toEqual({ id: "daily", body: "odd", term: "seven" });
  });

  it("rejects bad options naming the field, and changes nothing", () => {
    saveReport(db, "daily", "by 2", 2);
    const cases: Array<[unknown, string]> = [
      [{ table: "reports", key: { id: "daily" }, set: { body: "x" }, term: 0 }, "term: expected a term >= 1"],
      [{ table: "reports", key: { id: "daily" }, set: { body: "x" }, term: 2.5 }, "term: expected a whole number"],
      [{ table: "reports", key: {}, set: { body: "x" }, term: 3 }, "key: expected at least one key column"],
      [{ table: "reports", key: { id: null }, set: { body: "x" }, term: 3 }, "key.id: expected a value"],
      [{ table: "reports", key: { id: "daily" }, set: { id: "x" }, term: 3 }, "set.id: is a key column"],
      [{ table: "reports", key: { id: "daily" }, set: { term: 9 }, term: 3 }, "termColumn: the fence column"],
      [{ table: "reports", key: { id: "daily" }, set: { body: {} }, term: 3 }, "set.body: expected a string"],
      [{ table: "", key: { id: "daily" }, set: {}, term: 3 }, "table: expected a non-empty name"],
      [{ table: "reports", key: { id: "daily" }, set: {}, term: 3, extra: 1 }, "extra: unknown field"],
    ];
    for (const [options, message] of cases) {
      const error = thrown(() => fencedUpdate(db, options as never));
      expect(error).toBeInstanceOf(LeaseValidationError);
      expect((error as Error).message).toContain(message);
    }
    expect(thrown(() => fencedUpdate({} as never, { table: "t", key: { id: 1 }, set: {}, term: 1 }))).toMatchObject({
      message: expect.stringContaining("db: expected a better-sqlite3 Database"),
    });
    expect(row("daily")).toEqual({ id: "daily", body: "by 2", term: 2 });
  });
});
