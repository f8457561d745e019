/**
 * Records written by leasehold 0.1.0 kept protocol state in reserved metadata keys; 0.2.0 reads
 * them as the typed fields they mean and writes the typed form on the next write (docs/design.md §1
 * "Protocol fields"). A value that does not parse leaves the record corrupt, naming the key, and is
 * never silently dropped.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { isLeaseCorruptError } from "../src/errors.js";
import { parseRecord } from "../src/lease.js";

const DIGEST_A = "A".repeat(43);
const DIGEST_B = "B".repeat(43);

const legacy = (metadata: Record<string, string>, holder: string | null = "a") => ({
  name: "jobs/l",
  holder,
  term: 4,
  leaseMs: 1000,
  acquiredAt: 1,
  renewedAt: 2,
  metadata: { app: "x", ...metadata },
  writeId: "w",
});

describe("0.1.0 records", () => {
  it("a library bound lease: leasehold.session and leasehold.next become session and successor", () => {
    const r = parseRecord(
      "jobs/l",
      legacy({ "leasehold.session": "sessions/a@3", "leasehold.next": "sessions/b@7 b b" }),
    );
    expect(r.metadata).toEqual({ app: "x" });
    expect(r.session).toEqual({ name: "sessions/a", term: 3 });
    expect(r.successor).toEqual({ holder: "b b", session: { name: "sessions/b", term: 7 } });
  });

  it("an API's record: its digests and the HTTP store's escaped keys become typed fields", () => {
    const r = parseRecord(
      "jobs/l",
      legacy({
        "leasehold.instance": DIGEST_A,
        "leasehold.next-instance": DIGEST_B,
        "proxied.leasehold.session": "sessions/a@3",
        "proxied.leasehold.next": "sessions/b@7 b",
      }),
    );
    expect(r).toMatchObject({
      metadata: { app: "x" },
      holderDigest: DIGEST_A,
      successorDigest: DIGEST_B,
      session: { name: "sessions/a", term: 3 },
      successor: { holder: "b", session: { name: "sessions/b", term: 7 } },
    });
  });

  it("an API that kept its leases in another: its escaped digests become upstream", () => {
    const r = parseRecord("jobs/l", legacy({ "leasehold.instance": DIGEST_A, "proxied.leasehold.instance": DIGEST_B }));
    expect(r).toMatchObject({ metadata: { app: "x" }, holderDigest: DIGEST_A, upstream: { holderDigest: DIGEST_B } });
  });

  it("a released record drops what 0.1.0 would have dropped; a value that does not parse is corrupt, naming its key", () => {
    expect(parseRecord("jobs/l", legacy({ "leasehold.session": "sessions/a@3" }, null)).session).toBeUndefined();
    let caught: unknown;
    try {
      parseRecord("jobs/l", legacy({ "proxied.leasehold.session": "NOT A NAME@x" }));
    } catch (error) {
      caught = error;
    }
    expect(isLeaseCorruptError(caught)).toBe(true);
    expect((caught as { issues: Array<{ path: string }> }).issues.map((i) => i.path)).toEqual([
      "metadata.proxied.leasehold.session",
    ]);
  });

  describe("in a store", () => {
    const dir = mkdtempSync(join(tmpdir(), "leasehold-legacy-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("is read as typed fields, and the next write stores the typed form", async () => {
      const path = join(dir, "leases.db");
      const store = new SqliteStore({ path });
      await store.get("jobs/none"); // makes the table
      const db = new Database(path);
      const raw = JSON.stringify(legacy({ "leasehold.session": "sessions/a@3" }));
      db.prepare("INSERT INTO leases (name, rev, record) VALUES (?, 1, ?)").run("jobs/l", raw);
      const read = (await store.get("jobs/l"))!;
      expect(read.record).toMatchObject({ metadata: { app: "x" }, session: { name: "sessions/a", term: 3 } });
      await store.put({ ...read.record, renewedAt: 3, writeId: "w2" }, read.revision);
      const stored = JSON.parse(
        (db.prepare("SELECT record FROM leases WHERE name = ?").get("jobs/l") as { record: string }).record,
      );
      expect(stored.metadata).toEqual({ app: "x" });
      expect(stored.session).toEqual({ name: "sessions/a", term: 3 });
      db.close();
      await store.close();
    });
  });
});
