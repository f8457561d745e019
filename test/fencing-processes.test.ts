/**
 * docs/fencing.md's first claim, with real processes and a real SIGSTOP: a leader paused between
 * its leadership check and its write wakes up after its lease has passed to another process, and
 * writes with its old term. The SQLite fence refuses that write, and the process sees
 * StaleTermError carrying the new term. Both processes (test/support/fenced-leader.ts) campaign for
 * one lease in an SQLite file and write one row of another; the order of events is read from their
 * own output on CLOCK_MONOTONIC.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, expect, it } from "vitest";

const LEASE_MS = 1000;
const script = join(import.meta.dirname, "support", "fenced-leader.ts");
const dir = mkdtempSync(join(tmpdir(), "leasehold-fencing-procs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Line {
  event: string;
  identity: string;
  mono: string;
  term?: number;
  seenTerm?: number;
  signalAborted?: boolean;
}

interface Leader {
  child: ChildProcess;
  lines: Line[];
  /** Resolves with the first line of `event`. */
  next(event: string): Promise<Line>;
  exited: Promise<number | null>;
}

const running = new Set<ChildProcess>();
afterEach(() => {
  // SIGKILL reaches a stopped process too: nothing is left behind when a test fails.
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  running.clear();
});

function start(mode: "pause" | "once", identity: string, leaseDb: string, dataDb: string): Leader {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", script, mode, leaseDb, dataDb, identity, String(LEASE_MS)],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  running.add(child);
  const lines: Line[] = [];
  const waiters: Array<{ event: string; resolve: (line: Line) => void }> = [];
  let buffered = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const line = JSON.parse(buffered.slice(0, end)) as Line;
      buffered = buffered.slice(end + 1);
      lines.push(line);
      for (const w of waiters.filter((w) => w.event === line.event)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const next = (event: string) =>
    new Promise<Line>((resolve, reject) => {
      const seen = lines.find((l) => l.event === event);
      if (seen) return resolve(seen);
      waiters.push({ event, resolve });
      void exited.then((code) => reject(new Error(`${identity} exited (${code}) before "${event}"`)));
    });
  return { child, lines, next, exited };
}

const mono = (line: Line) => BigInt(line.mono);

it("a leader SIGSTOPped between its check and its write is refused by the fence when it wakes", async () => {
  const leaseDb = join(dir, "lease.db");
  const dataDb = join(dir, "data.db");
  const data = new Database(dataDb);
  data.pragma("journal_mode = WAL");
  data.exec("CREATE TABLE reports (id TEXT PRIMARY KEY, body TEXT NOT NULL, term INTEGER NOT NULL)");

  const a = start("pause", "a", leaseDb, dataDb);
  const checked = await a.next("checked");
  expect(checked.term).toBe(1);
  a.child.kill("SIGSTOP");

  // b takes over once a's lease has run out on b's own clock, writes with its term, and exits.
  const b = start("once", "b", leaseDb, dataDb);
  expect(await b.exited).toBe(0);
  const bWrote = b.lines.find((l) => l.event === "wrote");
  expect(bWrote?.term).toBe(2);

  // a wakes up and, without checking again, writes with the term it was given.
  a.child.stdin?.write("go\n");
  a.child.kill("SIGCONT");
  const refused = await a.next("refused");
  expect(await a.exited).toBe(0);

  expect(refused).toMatchObject({ term: 1, seenTerm: 2 });
  expect(mono(refused)).toBeGreaterThan(mono(bWrote!));
  // Nothing of a's term landed after b's first write: a wrote exactly once, before its pause.
  expect(a.lines.filter((l) => l.event === "wrote").map((l) => l.term)).toEqual([1]);
  expect(a.lines.filter((l) => l.event === "wrote").every((l) => mono(l) < mono(bWrote!))).toBe(true);
  // a's elector learns it lost the lease too (the watchdog fires on wake): it stops its term's work.
  const deposed = a.lines.find((l) => l.event === "deposed");
  expect(deposed).toMatchObject({ term: 1 });
  expect(a.lines.find((l) => l.event === "stopped")).toMatchObject({ term: 1 });
  expect(data.prepare("SELECT body, term FROM reports WHERE id = 'daily'").get()).toEqual({
    body: "by b (first)",
    term: 2,
  });
  data.close();
});
