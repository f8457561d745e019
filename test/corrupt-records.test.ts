/**
 * A row in the SQLite table that is not a lease record leasehold wrote (bad JSON, missing or
 * mistyped fields, oversized metadata, another lease's record, foreign data, a broken revision) is
 * a LeaseCorruptError on read, with a message that names the lease and what is wrong, and an
 * elector never overwrites it: it reports an `error` event and leaves the row byte for byte.
 * The rows are written with better-sqlite3 directly, as a foreign tool or a bad migration would.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { ManualClock } from "../src/clock.js";
import { LeaseCorruptError } from "../src/errors.js";
import { Elector } from "../src/leader/elector.js";
import type { LeaseRecord, Listed } from "../src/lease.js";
import { isUnreadable, listedName } from "../src/listing.js";
import { makeRecord } from "../src/testkit/store-contract.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-corrupt-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LEASE = 1000;
const NAME = "corrupt/lease";
const valid = (patch: Partial<LeaseRecord> = {}) => JSON.stringify(makeRecord(NAME, { holder: "ghost", ...patch }));
const withField = (field: string, value: unknown) => JSON.stringify({ ...makeRecord(NAME), [field]: value });
const without = (field: keyof LeaseRecord) => {
  const { [field]: _, ...rest } = makeRecord(NAME);
  return JSON.stringify(rest);
};

interface Case {
  label: string;
  rev: unknown;
  record: string;
  /** The issue the error must name: a field path (or "" for the whole record) and its message. */
  issue: { path: string; message: string | RegExp };
}

const cases: Case[] = [
  {
    label: "bad JSON",
    rev: 3,
    record: '{"name": "corrupt/lease", "holder": ',
    issue: { path: "", message: "not valid JSON" },
  },
  { label: "JSON that is not an object", rev: 3, record: '"hello"', issue: { path: "", message: /expected object/ } },
  { label: "a missing term", rev: 3, record: without("term"), issue: { path: "term", message: "expected a number" } },
  {
    label: "a missing writeId",
    rev: 3,
    record: without("writeId"),
    issue: { path: "writeId", message: "expected a string" },
  },
  {
    label: "a term stored as a string",
    rev: 3,
    record: withField("term", "4"),
    issue: { path: "term", message: "expected a number" },
  },
  {
    label: "a numeric holder",
    rev: 3,
    record: withField("holder", 12),
    issue: { path: "holder", message: "expected a string" },
  },
  {
    label: "a negative term",
    rev: 3,
    record: withField("term", -2),
    issue: { path: "term", message: "expected a non-negative number" },
  },
  {
    label: "huge metadata",
    rev: 3,
    record: withField("metadata", { blob: "x".repeat(64 * 1024) }),
    issue: { path: "metadata", message: "expected at most 1024 bytes as JSON" },
  },
  {
    label: "a record whose name differs from its key",
    rev: 3,
    record: JSON.stringify(makeRecord("other/lease")),
    issue: { path: "name", message: 'record names "other/lease"' },
  },
  {
    label: "a foreign lock record",
    rev: 3,
    record: JSON.stringify({ lockId: "abc", owner: "cron-1", expires: 1_700_000_000 }),
    issue: { path: "name", message: "expected a string" },
  },
  {
    label: "an unknown extra field",
    rev: 3,
    record: withField("owner", "bob"),
    issue: { path: "owner", message: "unknown field" },
  },
  {
    label: "a revision of zero",
    rev: 0,
    record: valid(),
    issue: { path: "rev", message: /expected a positive integer revision, got 0/ },
  },
  {
    label: "a textual revision",
    rev: "seven",
    record: valid(),
    issue: { path: "rev", message: /expected a positive integer revision, got "seven"/ },
  },
];

let path: string;
let store: SqliteStore;
let raw: Database.Database;
let seq = 0;

beforeEach(() => {
  path = join(dir, `leases-${seq++}.db`);
  store = new SqliteStore({ path });
  raw = new Database(path);
});
afterEach(async () => {
  raw.close();
  await store.close();
});

function writeRow(rev: unknown, record: string): void {
  raw.prepare("INSERT OR REPLACE INTO leases (name, rev, record) VALUES (?, ?, ?)").run(NAME, rev, record);
}

/** The row as SQLite holds it: its bytes and storage classes, so "unchanged" means byte-identical. */
function rowBytes(): unknown {
  return raw
    .prepare(
      "SELECT name, hex(rev) AS rev, typeof(rev) AS revType, hex(record) AS record, typeof(record) AS recordType FROM leases WHERE name = ?",
    )
    .get(NAME);
}

async function corruptError(p: Promise<unknown>): Promise<LeaseCorruptError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LeaseCorruptError);
  return error as LeaseCorruptError;
}

/** A manual clock that lets the store's real I/O (the SQLite writer thread) finish before time moves on. */
function settlingClock(): ManualClock {
  tracked = new TrackedStore(store);
  const inner = tracked;
  return new ManualClock({ idle: () => inner.settle() });
}
let tracked: TrackedStore | undefined;

function electorOn(clock: ManualClock, identity: string) {
  const elector = new Elector({
    store: tracked ?? store,
    name: NAME,
    identity,
    leaseMs: LEASE,
    renewMs: 300,
    retryMs: 100,
    safetyMs: 100,
    jitter: 0,
    clock,
    // It renews the lease's own record, so it meets what replaced it (a bound lease's leader
    // writes only its session's record).
    session: false,
  });
  const errors: Array<{ error: unknown; during: string }> = [];
  const elected: number[] = [];
  elector.on("error", (e) => errors.push(e));
  elector.on("elected", (e) => elected.push(e.term));
  return { elector, errors, elected };
}

describe("corrupt or foreign records in the SQLite store", () => {
  it.each(cases)("$label: get reports LeaseCorruptError naming the problem", async ({ rev, record, issue }) => {
    writeRow(rev, record);
    const error = await corruptError(store.get(NAME));
    expect(error.lease).toBe(NAME);
    expect(error.issues).toContainEqual({ path: issue.path, message: expect.stringMatching(issue.message) });
    expect(error.message).toMatch(
      /^lease "corrupt\/lease" holds a record leasehold cannot read \(refusing to overwrite it\): /,
    );
    // Listing a prefix that contains it reports it in its place with the same error, never
    // skipping it silently and never failing the rest of the listing.
    await store.put(makeRecord("corrupt/next"), null);
    const listed: Listed[] = [];
    for await (const entry of store.list("corrupt/")) listed.push(entry);
    expect(listed.map(listedName)).toEqual([NAME, "corrupt/next"]);
    const entry = listed[0]!;
    expect(isUnreadable(entry)).toBe(true);
    if (isUnreadable(entry)) {
      expect(entry.unreadable).toBeInstanceOf(LeaseCorruptError);
      expect(entry.unreadable.issues).toEqual(error.issues);
      // The revision, where the row's is sound: what `release --force` replaces.
      expect(entry.revision).toBe(error.revision);
      expect(error.revision).toBe(typeof rev === "number" && rev > 0 ? String(rev) : undefined);
    }
  });

  it.each(cases)("$label: an elector campaigns for 5 leases and never overwrites it", async ({ rev, record }) => {
    writeRow(rev, record);
    const before = rowBytes();
    const clock = settlingClock();
    const a = electorOn(clock, "a");
    a.elector.start();
    await clock.advance(LEASE * 5);
    await a.elector.stop();
    expect(rowBytes()).toEqual(before);
    expect(a.elected).toEqual([]);
    expect(a.errors.length).toBeGreaterThan(0);
    for (const { error, during } of a.errors) {
      expect(error).toBeInstanceOf(LeaseCorruptError);
      expect(during).toBe("read");
    }
  });

  it("a leader whose record is replaced by foreign data steps down at its window's end and leaves the row alone", async () => {
    const clock = settlingClock();
    const a = electorOn(clock, "a");
    a.elector.start();
    await clock.advance(0);
    expect(a.elected).toEqual([1]);
    const lastSent = a.elector.current.lastRenewalSentAt!;
    // A foreign tool rewrites the row (bumping rev, as any UPDATE that knows the schema would).
    raw.prepare("UPDATE leases SET rev = rev + 1, record = ? WHERE name = ?").run('{"owner":"cron-1"}', NAME);
    const before = rowBytes();
    let deposed: { at: number; reason: string } | undefined;
    a.elector.on("deposed", (e) => {
      deposed = { at: clock.now(), reason: e.reason };
    });
    await clock.advance(LEASE * 5);
    expect(deposed).toEqual({ at: lastSent + LEASE - 100, reason: "expired" });
    expect(rowBytes()).toEqual(before);
    expect(a.errors.some((e) => e.during === "renew" && e.error instanceof LeaseCorruptError)).toBe(true);
    expect(a.errors.every((e) => e.error instanceof LeaseCorruptError)).toBe(true);
    await a.elector.stop();
    expect(rowBytes()).toEqual(before);
  });
});
