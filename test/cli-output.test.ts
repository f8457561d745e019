/** The CLI's pure helpers: durations, lease views, tables, and how watch names a change. */
import { describe, expect, it } from "vitest";
import { exitCodeOf } from "../src/cli/job.js";
import { describeExpiry, formatDuration, formatTable, statusOf } from "../src/cli/output.js";
import { changeOf } from "../src/cli/watch.js";
import type { Stored } from "../src/lease.js";
import { makeRecord } from "../src/testkit/store-contract.js";

const stored = (revision: string, patch: Parameters<typeof makeRecord>[1] = {}): Stored => ({
  record: makeRecord("a", patch),
  revision,
});

describe("formatDuration", () => {
  it.each([
    [0, "0ms"],
    [850, "850ms"],
    [12_340, "12.3s"],
    [245_000, "4m05s"],
    [7_380_000, "2h03m"],
    [273_600_000, "3d04h"],
    [-4_100, "4.1s"],
  ])("%d ms -> %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe("statusOf / describeExpiry", () => {
  const now = 1_700_000_010_000;
  it("held, expired, released", () => {
    const held = statusOf(stored("1", { renewedAt: now - 5_000, leaseMs: 15_000 }), now);
    expect(held).toMatchObject({ state: "held", expiresInMs: 10_000, expiresAt: now + 10_000 });
    expect(describeExpiry(held)).toBe("10.0s");
    const expired = statusOf(stored("1", { renewedAt: now - 20_000, leaseMs: 15_000 }), now);
    expect(expired.state).toBe("expired");
    expect(describeExpiry(expired)).toBe("expired 5.0s ago");
    const released = statusOf(stored("1", { holder: null }), now);
    expect(released).toMatchObject({ state: "released", expiresInMs: null });
    expect(describeExpiry(released)).toBe("released");
  });
});

it("formatTable pads every column but the last", () => {
  expect(
    formatTable(
      ["A", "BB"],
      [
        ["long", "x"],
        ["y", ""],
      ],
    ),
  ).toEqual(["A     BB", "long  x", "y"]);
});

describe("changeOf", () => {
  const a1 = stored("1", { holder: "a", term: 1 });
  it.each([
    [undefined, a1, "current"],
    [undefined, null, "absent"],
    [null, null, undefined],
    [null, a1, "created"],
    [a1, a1, undefined],
    [a1, stored("2", { holder: "a", term: 1 }), "renewed"],
    [a1, stored("2", { holder: null, term: 1 }), "released"],
    [a1, stored("2", { holder: "b", term: 2 }), "acquired"],
    [a1, stored("2", { holder: "a", term: 2 }), "acquired"],
    [a1, null, "absent"],
  ] as const)("%#", (previous, next, event) => {
    expect(changeOf(previous, next)).toBe(event);
  });
});

it("exit codes of a command's outcome", () => {
  expect(exitCodeOf({ kind: "exited", code: 3 })).toBe(3);
  expect(exitCodeOf({ kind: "signalled", signal: "SIGTERM" })).toBe(143);
  expect(exitCodeOf({ kind: "failed", code: "ENOENT", message: "" })).toBe(127);
  expect(exitCodeOf({ kind: "failed", code: "EACCES", message: "" })).toBe(126);
});
