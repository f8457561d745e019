/**
 * Bound leases across real OS processes and a real SIGSTOP: process a holds 40 leases on one
 * session, process b follows them on its own; a is stopped past its session's lease, b fences a's
 * session and takes every lease at term 2, and a, continued, acts under no lost term. Checked from
 * both processes' own output on one clock (CLOCK_MONOTONIC), as test/fencing-processes.test.ts does.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { type JsonLinesProcess, killAfterEach, startJsonLines } from "./support/json-lines-process.js";

const LEASES = 40;
const LEASE_MS = 1000;
const script = join(import.meta.dirname, "support", "bound-worker.ts");
const dir = mkdtempSync(join(tmpdir(), "leasehold-bound-procs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Line {
  event: string;
  identity: string;
  mono: string;
  lease?: number;
  term?: number;
  reason?: string;
  acted?: Array<[number, number]>;
}

type Proc = JsonLinesProcess<Line>;

killAfterEach();

function start(identity: string, db: string): Proc {
  return startJsonLines<Line>(identity, script, [db, identity, String(LEASES), String(LEASE_MS)]);
}

const mono = (line: Line) => BigInt(line.mono);

it("a process SIGSTOPped past its session's lease loses every bound lease and, continued, acts under none", async () => {
  const db = join(dir, "leases.db");
  const a = start("a", db);
  await a.until((l) => l.event === "elected", LEASES);
  const b = start("b", db);
  await b.until((l) => l.event === "session");
  a.child.kill("SIGSTOP");
  const stoppedAt = process.hrtime.bigint();
  await b.until((l) => l.event === "elected", LEASES);
  a.child.kill("SIGCONT");
  // a wakes: its session's window has closed; its leases end; it establishes a new session.
  await a.until((l) => l.event === "deposed", LEASES);
  await a.until((l) => l.event === "session" && (l.term ?? 0) > 1);
  await new Promise((resolve) => setTimeout(resolve, LEASE_MS));
  for (const p of [a, b]) p.child.stdin?.write("stop\n");
  expect(await a.exited).toBe(0);
  expect(await b.exited).toBe(0);

  // b took every lease at term 2, and only after a was stopped.
  const bElected = b.lines.filter((l) => l.event === "elected");
  expect(bElected.map((l) => l.term)).toEqual(Array.from({ length: LEASES }, () => 2));
  expect(bElected.every((l) => mono(l) > stoppedAt)).toBe(true);
  // a never led again: one election per lease, at term 1.
  expect(a.lines.filter((l) => l.event === "elected").map((l) => l.term)).toEqual(
    Array.from({ length: LEASES }, () => 1),
  );
  expect(a.lines.filter((l) => l.event === "deposed").every((l) => l.term === 1)).toBe(true);
  // On one timeline, per lease: every act of a (term 1) comes before b's election of it, and
  // every act of b is at term 2. No act under a lost term.
  const firstB = new Map(bElected.map((l) => [l.lease!, mono(l)]));
  const aActs = a.lines.filter((l) => l.event === "act");
  expect(aActs.length).toBeGreaterThan(0);
  for (const line of aActs) {
    for (const [lease, term] of line.acted ?? []) {
      expect(term).toBe(1);
      expect(mono(line) < firstB.get(lease)!, `a acted on lease ${lease} after b took it`).toBe(true);
    }
  }
  const bActs = b.lines.filter((l) => l.event === "act").flatMap((l) => l.acted ?? []);
  expect(bActs.length).toBeGreaterThan(0);
  expect(bActs.every(([, term]) => term === 2)).toBe(true);
});
