/**
 * Renewals first (docs/design.md §4): one process with 500 electors (50 leases x 10 candidates) on
 * one SQLite file, its event loop blocked 200-400 ms every second and a CPU hog on each core, with
 * the process's load lane and without it (`openLane`), side by side at two lease lengths. Each run
 * is test/support/lane-load.ts in its own process; the numbers are its own output.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { machineLoad } from "./support/common.js";
import type { Table } from "./table.js";

const exec = promisify(execFile);
const worker = join(import.meta.dirname, "..", "test", "support", "lane-load.ts");
const SECONDS = 20;

interface Summary {
  lost: number;
  renewals: number;
  reads: number;
  writes: number;
  blocks: number;
  lane?: { shed: { poll: number; acquire: number }; latenessMs: number };
}

async function once(dir: string, lane: "on" | "off", leaseMs: number): Promise<Summary> {
  const db = join(dir, `${lane}-${leaseMs}.db`);
  const { stdout } = await exec(
    process.execPath,
    ["--import", "tsx", worker, db, lane, "50", "10", String(leaseMs), String(SECONDS)],
    { timeout: 300_000, maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Summary;
}

export async function run(): Promise<Table[]> {
  const dir = mkdtempSync(join(tmpdir(), "leasehold-lane-bench-"));
  const hogs: ChildProcess[] = [];
  const loadBefore = machineLoad();
  const rows: Array<Array<string | number>> = [];
  try {
    for (let i = 0; i < 2; i++) hogs.push(spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" }));
    for (const leaseMs of [2000, 3000, 5000]) {
      for (const lane of ["off", "on"] as const) {
        const s = await once(dir, lane, leaseMs);
        rows.push([
          leaseMs,
          lane === "on" ? "load lane" : "none (openLane)",
          s.lost,
          s.renewals,
          s.reads,
          s.writes - s.renewals,
          s.lane?.shed.poll ?? "-",
          s.lane ? Math.round(s.lane.latenessMs) : "-",
          s.blocks,
        ]);
      }
    }
  } finally {
    for (const hog of hogs) hog.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
  return [
    {
      title: "Renewals first: terms lost under a blocked loop and a CPU hog",
      note: `50 leases x 10 candidates in one process on SQLite, no push (followers poll every leaseMs / 7.5), the loop blocked 200-400 ms once a second, a CPU hog on each core, ${SECONDS} s after every lease has a leader. Writes besides renewals are takeovers and their attempts. Load: ${loadBefore} at the start, ${machineLoad()} at the end.`,
      columns: [
        "leaseMs",
        "lane",
        "terms lost",
        "renewals",
        "follower reads",
        "other writes",
        "polls shed",
        "loop lateness p99 ms",
        "loop blocks",
      ],
      rows,
    },
  ];
}
