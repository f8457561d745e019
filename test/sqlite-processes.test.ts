/** Several OS processes sharing one SQLite file: the CAS holds across processes, not just in one. */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { makeRecord } from "../src/testkit/store-contract.js";

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "leasehold-procs-"));
const db = join(dir, "shared.db");
const racer = join(import.meta.dirname, "support", "sqlite-racer.ts");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function child(...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, ["--import", "tsx", racer, ...args], { timeout: 60_000 });
  return JSON.parse(stdout.trim().split("\n").pop()!);
}

describe("sqlite store across OS processes", () => {
  it("8 processes CAS the same revision at the same instant: exactly one wins", async () => {
    const store = new SqliteStore({ path: db });
    const base = await store.put(makeRecord("race/once"), null);
    const startAt = String(Date.now() + 1500); // after every child has loaded
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => child("once", db, "race/once", base.revision, `p${i}`, startAt)),
    );
    expect(results.filter((r) => r.won)).toHaveLength(1);
    expect(results.filter((r) => !r.won).every((r) => r.conflict)).toBe(true);
    const winner = results.find((r) => r.won)!.id;
    expect((await store.get("race/once"))?.record).toMatchObject({ holder: winner, term: 2, writeId: `w-${winner}` });
    await store.close();
  });

  it("4 processes each make 100 read-CAS increments: no update is lost", async () => {
    const store = new SqliteStore({ path: db });
    await store.put(makeRecord("race/count", { metadata: { count: "0" } }), null);
    await Promise.all(Array.from({ length: 4 }, (_, i) => child("count", db, "race/count", `p${i}`, "100")));
    const final = await store.get("race/count");
    expect(final?.record.metadata.count).toBe("400");
    expect(final?.revision).toBe("401");
    await store.close();
  });
});
