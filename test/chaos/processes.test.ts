/**
 * Real time, real processes: 5 OS processes (worker.ts) compete for one SQLite lease (600 ms,
 * renew 150 ms) and write to a fenced table in the same file while the test SIGKILLs leaders and
 * followers (replacing them) and SIGSTOPs leaders for longer than the lease. Then the checker
 * reads the logs: one holder per term, terms increasing, and the fenced table never took an older
 * term after a newer one. The plan is seeded; only what the kernel does with time is not.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/backends/sqlite/store.js";
import { checkFencing, checkOneHolderPerTerm, checkTermsIncrease, type Election } from "./checker.js";
import type { FencedWrite } from "./fenced-resource.js";
import { Prng } from "./prng.js";
import { FENCED_SCHEMA, type WorkerLogLine } from "./worker-log.js";

const LEASE_MS = 600;
const RENEW_MS = 150;
const WRITE_EVERY_MS = 40;
const LEASE = "chaos/processes";
const SEED = Number(process.env.CHAOS_PROCESS_SEED ?? 7);

const dir = mkdtempSync(join(tmpdir(), "leasehold-chaos-procs-"));
const db = join(dir, "shared.db");
const worker = join(import.meta.dirname, "worker.ts");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Child {
  identity: string;
  log: string;
  process: ChildProcess;
  exited: Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function start(identity: string): Promise<Child> {
  const log = join(dir, `${identity}.jsonl`);
  const child = spawn(
    process.execPath,
    ["--import", "tsx", worker, db, LEASE, identity, log, String(LEASE_MS), String(RENEW_MS), String(WRITE_EVERY_MS)],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.stdout?.once("data", () => resolve({ identity, log, process: child, exited }));
    void exited.then(() => reject(new Error(`${identity} exited before it was ready`)));
  });
}

function readLog(path: string): WorkerLogLine[] {
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return []; // never elected, never deposed
  }
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as WorkerLogLine);
}

describe("chaos across OS processes on one SQLite file", () => {
  it("SIGKILL and SIGSTOP past the lease: one holder per term, terms increase, fencing holds", async () => {
    const setup = new Database(db);
    setup.exec(FENCED_SCHEMA);
    setup.close();
    const leases = new SqliteStore({ path: db });
    const rng = new Prng(SEED);
    let next = 0;
    const children: Child[] = await Promise.all(Array.from({ length: 5 }, () => start(`w${next++}`)));
    const live = () => children.filter((c) => c.process.exitCode === null && c.process.signalCode === null);
    const holder = async () => {
      const stored = await leases.get(LEASE);
      return live().find((c) => c.identity === stored?.record.holder);
    };
    const done: string[] = [];
    const plan = ["pause-leader", "kill-leader", "pause-leader", "kill-follower", "pause-follower", "kill-leader"];
    try {
      await sleep(800); // someone is elected
      for (const step of plan) {
        const leader = await holder();
        const followers = live().filter((c) => c !== leader);
        const target = step.endsWith("leader") && leader ? leader : rng.pick(followers);
        if (step.startsWith("kill")) {
          target.process.kill("SIGKILL");
          await target.exited;
          children.push(await start(`w${next++}`));
        } else {
          target.process.kill("SIGSTOP");
          await sleep(LEASE_MS * rng.between(1.6, 2.4));
          target.process.kill("SIGCONT");
        }
        done.push(`${step} ${target.identity}`);
        await sleep(rng.between(300, 700));
      }
      await sleep(LEASE_MS * 2); // let the last takeover settle
    } finally {
      for (const c of live()) {
        c.process.kill("SIGCONT");
        c.process.kill("SIGTERM");
      }
      await Promise.race([Promise.all(children.map((c) => c.exited)), sleep(5000)]);
      for (const c of live()) c.process.kill("SIGKILL");
      await leases.close();
    }

    const lines = children.flatMap((c) => readLog(c.log));
    // A term's acquisition is stamped before its write is sent, and the next term's only after that
    // write was seen for a lease: ordering by it is robust to a process paused before it logs.
    const elections: Election[] = lines
      .filter((l) => l.event === "elected")
      .sort((a, b) => (a.acquiredAt ?? 0) - (b.acquiredAt ?? 0))
      .map((l) => ({ candidate: l.identity, identity: l.identity, term: l.term, at: l.acquiredAt ?? 0 }));
    const read = new Database(db, { readonly: true });
    const fenced: FencedWrite[] = read
      .prepare<[], { term: number; writer: string; wall: number; accepted: number }>(
        "SELECT term, writer, wall, accepted FROM fenced_log ORDER BY seq",
      )
      .all()
      .map((r) => ({ writer: r.writer, term: r.term, sentAt: r.wall, landedAt: r.wall, accepted: r.accepted === 1 }));
    read.close();

    const violations = [
      ...checkOneHolderPerTerm({ elections }),
      ...checkTermsIncrease(elections),
      ...checkFencing({ elections, windows: [], fenced }),
    ];
    const rejected = fenced.filter((w) => !w.accepted);
    console.log(
      `chaos processes (seed ${SEED}): ${done.join(", ")}; ${elections.length} elections, ` +
        `${fenced.length - rejected.length} fenced writes accepted, ${rejected.length} rejected ` +
        `(terms ${[...new Set(rejected.map((w) => w.term))].join(",") || "-"})`,
    );
    expect(violations, `seed ${SEED}`).toEqual([]);
    expect(done).toHaveLength(plan.length);
    expect(elections.length).toBeGreaterThanOrEqual(2);
    expect(fenced.length).toBeGreaterThan(0);
  }, 60_000);
});
