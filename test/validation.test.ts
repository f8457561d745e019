/**
 * Bad input at every public entry point is refused with a LeaseValidationError that names the field
 * and what was expected, and nothing is changed: no store call, no file, no record.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MemoryStore } from "../src/backends/memory/store.js";
import { SqliteStore } from "../src/backends/sqlite/store.js";
import { ManualClock } from "../src/clock.js";
import { LeaseValidationError } from "../src/errors.js";
import { Elector } from "../src/leader/elector.js";
import { runAsLeader } from "../src/leader/run-as-leader.js";
import { type LeaseRecord, MAX_METADATA_BYTES, RECORD_NAME_RULE } from "../src/lease.js";
import { makeRecord } from "../src/testkit/store-contract.js";
import { TrackedStore } from "../src/testkit/tracked-store.js";

const dir = mkdtempSync(join(tmpdir(), "leasehold-validation-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `f`, expects a LeaseValidationError, returns it. */
async function rejection(f: () => unknown): Promise<LeaseValidationError> {
  let caught: unknown;
  try {
    await f();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(LeaseValidationError);
  return caught as LeaseValidationError;
}

const untouched = () => new TrackedStore(new MemoryStore());

describe("Elector options", () => {
  const cases: Array<[string, Record<string, unknown>, string, string | RegExp]> = [
    [
      "a store without put",
      { store: { get: async () => null } },
      "store",
      "expected a LeaseStore (an object with get and put)",
    ],
    [
      "an upper-case name",
      { name: "Jobs/Main" },
      "name",
      /^expected 1-192 characters: "\/"-separated segments of a-z 0-9/,
    ],
    ["a name ending in a slash", { name: "jobs/" }, "name", /^expected 1-192 characters/],
    ["an empty identity", { identity: "" }, "identity", "expected a non-empty string"],
    [
      "an identity with a newline",
      { identity: "a\nb" },
      "identity",
      "expected no control, format or line-separator characters (Unicode Cc, Cf, Zl, Zp: bidirectional controls among them)",
    ],
    [
      "an identity with a right-to-left override",
      { identity: "\u202e1-dop" },
      "identity",
      "expected no control, format or line-separator characters (Unicode Cc, Cf, Zl, Zp: bidirectional controls among them)",
    ],
    ["a lease given as a string", { leaseMs: "1000" }, "leaseMs", "expected a number of milliseconds"],
    ["a fractional lease", { leaseMs: 1000.5 }, "leaseMs", "expected a whole number of milliseconds"],
    ["a 1 ms lease", { leaseMs: 1 }, "leaseMs", "expected at least 10 ms"],
    ["a zero renewal", { renewMs: 0 }, "renewMs", "expected more than 0 ms"],
    ["a negative retry", { retryMs: -5 }, "retryMs", "expected a non-negative number"],
    [
      "an infinite safety margin",
      { safetyMs: Number.POSITIVE_INFINITY },
      "safetyMs",
      "expected the safety margin in milliseconds",
    ],
    ["jitter above 1", { jitter: 1.5 }, "jitter", "expected 0 to 1"],
    ["a NaN skew bound", { maxSkewMs: Number.NaN }, "maxSkewMs", "expected the clock skew bound in milliseconds"],
    ["a zero call timeout", { callTimeoutMs: 0 }, "callTimeoutMs", "expected more than 0 ms"],
    ["a negative grace", { graceMs: -1 }, "graceMs", "expected a non-negative number"],
    ["metadata with a number", { metadata: { port: 8080 } }, "metadata.port", "expected string values"],
    [
      "metadata over 1 KiB",
      { metadata: { big: "x".repeat(MAX_METADATA_BYTES) } },
      "metadata",
      `expected at most ${MAX_METADATA_BYTES} bytes as JSON`,
    ],
    [
      "a clock without sleep",
      { clock: { now: () => 0, wallNow: () => 0 } },
      "clock",
      "expected a Clock (an object with now, wallNow and sleep)",
    ],
    ["a random that is a number", { random: 0.5 }, "random", "expected a function returning [0, 1)"],
    [
      "a renewal slower than the safe window",
      { leaseMs: 1000, safetyMs: 100, renewMs: 900 },
      "renewMs",
      /^expected less than leaseMs - safetyMs \(1000 - 100 = 900\), got 900/,
    ],
    [
      "a safety margin as long as the lease",
      { leaseMs: 1000, safetyMs: 1000, renewMs: 10 },
      "safetyMs",
      "expected less than leaseMs (1000), got 1000",
    ],
    [
      "a retry longer than the lease",
      { leaseMs: 1000, retryMs: 1001 },
      "retryMs",
      "expected at most leaseMs (1000), got 1001",
    ],
  ];

  it.each(cases)("refuses %s, naming the field, without a store call", async (_, patch, path, message) => {
    const store = untouched();
    const error = await rejection(() => new Elector({ store, name: "jobs/main", ...patch } as never));
    expect(error.issues).toContainEqual({
      path,
      message: expect.stringMatching(typeof message === "string" ? `^${escapeRegExp(message)}$` : message),
    });
    expect(error.message).toMatch(new RegExp(`^invalid elector options: .*${escapeRegExp(path)}: `));
    expect(store.counts).toEqual({ get: 0, put: 0, list: 0, getMany: 0 });
  });

  it("refuses a missing options object with a sentence, not a stack trace", async () => {
    const error = await rejection(() => new Elector(undefined as never));
    expect(error.message).toBe("invalid elector options: expected an options object with store and name");
  });

  it("lists every bad field of one call together", async () => {
    const error = await rejection(() => new Elector({ store: untouched(), name: "", leaseMs: -1, jitter: 2 } as never));
    expect(error.issues.map((i) => i.path).sort()).toEqual(["jitter", "leaseMs", "name"]);
  });
});

describe("SqliteStore options", () => {
  const cases: Array<[string, (path: string) => unknown, string, string]> = [
    ["a missing options object", () => undefined, "", "expected an object with path"],
    ["a numeric path", () => ({ path: 42 }), "path", 'expected a file path or ":memory:"'],
    ["an empty path", () => ({ path: "" }), "path", 'expected a file path or ":memory:"'],
    [
      "a table name with a space",
      (path) => ({ path, table: "my leases" }),
      "table",
      "expected 1-63 letters, digits or _, not starting with a digit",
    ],
    [
      "a table name that is SQL",
      (path) => ({ path, table: "x; DROP TABLE y" }),
      "table",
      "expected 1-63 letters, digits or _, not starting with a digit",
    ],
    [
      "a negative busy timeout",
      (path) => ({ path, busyTimeoutMs: -1 }),
      "busyTimeoutMs",
      "expected a non-negative number",
    ],
    [
      "a busy timeout as a string",
      (path) => ({ path, busyTimeoutMs: "5000" }),
      "busyTimeoutMs",
      "expected milliseconds",
    ],
    [
      "a fractional busy timeout",
      (path) => ({ path, busyTimeoutMs: 2.5 }),
      "busyTimeoutMs",
      "expected whole milliseconds",
    ],
  ];

  it.each(cases)("refuses %s and creates no folder or file", async (label, options, path, message) => {
    const folder = join(dir, label.replaceAll(" ", "-"));
    const file = join(folder, "leases.db");
    const error = await rejection(() => new SqliteStore(options(file) as never));
    expect(error.issues).toEqual([{ path, message }]);
    expect(error.message).toBe(`invalid SqliteStore options: ${path ? `${path}: ` : ""}${message}`);
    expect(existsSync(folder)).toBe(false);
  });
});

describe("MemoryStore.put", () => {
  const name = "jobs/main";
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ["a bad name", { name: "Jobs" }, "name", RECORD_NAME_RULE],
    ["a numeric holder", { holder: 7 }, "holder", "expected a string"],
    ["a negative term", { term: -1 }, "term", "expected a non-negative number"],
    ["a fractional term", { term: 1.5 }, "term", "expected a whole number"],
    ["a lease as a string", { leaseMs: "15000" }, "leaseMs", "expected a number of milliseconds"],
    ["a wall time in seconds as a float", { renewedAt: 1.7e9 + 0.5 }, "renewedAt", "expected whole milliseconds"],
    ["a negative acquiredAt", { acquiredAt: -1 }, "acquiredAt", "expected a non-negative number"],
    ["metadata with an array", { metadata: { tags: ["a"] } }, "metadata.tags", "expected string values"],
    ["an extra field", { owner: "bob" }, "owner", "unknown field"],
  ];

  it.each(cases)("refuses %s and leaves the stored record as it was", async (_, patch, path, message) => {
    const store = new MemoryStore();
    const before = await store.put(makeRecord(name), null);
    const bad = { ...makeRecord(name), ...patch } as LeaseRecord;
    const error = await rejection(() => store.put(bad, before.revision));
    expect(error.issues).toContainEqual({ path, message });
    expect(error.message).toMatch(/^invalid lease record: /);
    expect(await store.get(name)).toEqual(before);
  });

  it.each([
    ["a revision the store never issued", "abc"],
    ["revision zero", "0"],
    ["a number instead of the opaque string", 1],
  ])("refuses %s as the expected revision and creates nothing", async (_, expected) => {
    const store = new MemoryStore();
    const error = await rejection(() => store.put(makeRecord(name), expected as never));
    expect(error.issues).toEqual([
      {
        path: "expected",
        message: `expected a revision this store issued (a positive integer), got ${JSON.stringify(expected)}`,
      },
    ]);
    expect(await store.get(name)).toBeNull();
  });
});

describe("runAsLeader", () => {
  const base = () => ({ store: untouched(), name: "jobs/main", clock: new ManualClock() });

  it("rejects bad elector options before campaigning", async () => {
    const options = { ...base(), leaseMs: 5 };
    const error = await rejection(() => runAsLeader(options, () => "done"));
    expect(error.issues).toEqual([{ path: "leaseMs", message: "expected at least 10 ms" }]);
    expect(options.store.counts).toEqual({ get: 0, put: 0, list: 0, getMany: 0 });
  });

  const cases: Array<[string, Record<string, unknown>, unknown, string, string]> = [
    ["fn that is not a function", {}, "not a function", "fn", "expected a function (context) => result"],
    [
      "a signal that is not an AbortSignal",
      { signal: { aborted: false } },
      () => 1,
      "signal",
      "expected an AbortSignal",
    ],
    [
      "an onElector that is not a function",
      { onElector: "yes" },
      () => 1,
      "onElector",
      "expected a function (elector) => void",
    ],
  ];
  it.each(cases)("rejects %s without touching the lease", async (_, patch, fn, path, message) => {
    const options = { ...base(), ...patch };
    const error = await rejection(() => runAsLeader(options as never, fn as never));
    expect(error.issues).toEqual([{ path, message }]);
    expect(error.message).toBe(`invalid runAsLeader arguments: ${path}: ${message}`);
    expect(options.store.counts).toEqual({ get: 0, put: 0, list: 0, getMany: 0 });
    expect(await options.store.inner.get("jobs/main")).toBeNull();
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
