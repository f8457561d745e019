/**
 * Scheduled jobs under chaos and clock skew: double runs and missed fires, leasehold beside
 * ShedLock 6.3.0 with its JDBC provider (Maven Central), each on its own SQLite file (docs/schedule.md,
 * docs/benchmarks.md "Scheduled jobs").
 *
 * Each system runs three replicas of one job firing every second, 200 ms of work a fire, for
 * SCHEDULE_BENCH_SECONDS (default 60) per scenario, both systems at once on this machine:
 *   - no faults;
 *   - chaos: every 2-5 s (seeded) a replica, most often the one running the job, is SIGKILLed (and
 *     restarted at once, as a supervisor would) or SIGSTOPped for 1-6 s;
 *   - skew: one replica's wall clock 2 s ahead, one 5 s behind (an in-process offset: leasehold's
 *     injected clock, ShedLock's ClockProvider and trigger), with and without chaos.
 * leasehold: `schedule()` with lockAtMostFor 3 s (bench/support/schedule-replica.ts). ShedLock: the
 * Spring-style one-second trigger calling DefaultLockingTaskExecutor with lockAtMostFor 3 s and
 * lockAtLeastFor 800 ms (bench/peers/shedlock/ShedlockReplica.java), as its docs advise for short
 * tasks on nodes whose clocks differ.
 *
 * From the runs' own lines (test/support/fire-writer.ts format, CLOCK_MONOTONIC), over the fires
 * of the middle of each run (its first and last 5 s left out): fires run twice, fires not run,
 * and pairs of runs that overlapped in time. leasehold's replicas also report the fires they
 * settled as missed; that count is shown beside the measured one.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Prng } from "../test/chaos/prng.js";
import { killMentioning } from "../test/support/cli-processes.js";
import { type FireLine, readFireLog } from "../test/support/fire-writer.js";
import type { Table } from "./table.js";

const exec = promisify(execFile);
const repo = join(import.meta.dirname, "..");
const SECONDS = Number(process.env.SCHEDULE_BENCH_SECONDS ?? 60);
const SEED = Number(process.env.SCHEDULE_BENCH_SEED ?? 11);
const WORK_MS = 200;
const AT_MOST_MS = 3000;
const AT_LEAST_MS = 800;
const EDGE_MS = 5000;

interface Scenario {
  label: string;
  chaos: boolean;
  skews: [number, number, number];
}

const SCENARIOS: Scenario[] = [
  { label: "no faults", chaos: false, skews: [0, 0, 0] },
  { label: "chaos", chaos: true, skews: [0, 0, 0] },
  { label: "skew: +2 s, -5 s", chaos: false, skews: [0, 2000, -5000] },
  { label: "chaos and skew: +2 s, -5 s", chaos: true, skews: [0, 2000, -5000] },
];

interface System {
  label: string;
  command(o: { dir: string; log: string; identity: string; skewMs: number }): { file: string; args: string[] };
}

const leasehold: System = {
  label: "leasehold 0.1 (`schedule()`, SQLite)",
  command: ({ dir, log, identity, skewMs }) => ({
    file: process.execPath,
    args: [
      "--import",
      "tsx",
      join(repo, "bench/support/schedule-replica.ts"),
      `sqlite:${join(dir, "jobs.db")}`,
      "jobs/bench",
      identity,
      String(skewMs),
      String(AT_MOST_MS),
      String(WORK_MS),
      log,
    ],
  }),
};

/** Resolves ShedLock with Maven and compiles bench/peers/shedlock/ShedlockReplica.java. */
async function shedlock(): Promise<System> {
  const out = mkdtempSync(join(tmpdir(), "leasehold-shedlock-"));
  const cpFile = join(out, "classpath");
  const pom = join(repo, "bench/peers/shedlock/pom.xml");
  await exec("mvn", ["-q", "-f", pom, "dependency:build-classpath", `-Dmdep.outputFile=${cpFile}`], {
    timeout: 600_000,
  });
  const classpath = readFileSync(cpFile, "utf8").trim();
  await exec("javac", ["-cp", classpath, "-d", out, join(repo, "bench/peers/shedlock/ShedlockReplica.java")]);
  return {
    label: "ShedLock 6.3.0 (JdbcLockProvider, SQLite)",
    command: ({ dir, log, identity, skewMs }) => ({
      file: "java",
      args: [
        "-XX:TieredStopAtLevel=1",
        "-cp",
        `${out}:${classpath}`,
        "ShedlockReplica",
        join(dir, "shedlock.db"),
        "bench",
        identity,
        String(skewMs),
        String(AT_MOST_MS),
        String(AT_LEAST_MS),
        String(WORK_MS),
        log,
      ],
    }),
  };
}

interface Replica {
  identity: string;
  child: ChildProcess;
  out: string;
  exited: boolean;
}

interface Result {
  fires: number;
  twice: number;
  missed: number;
  overlaps: number;
  reported: number | undefined;
  faults: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function runScenario(system: System, scenario: Scenario, seed: number): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), "leasehold-schedule-bench-"));
  const log = join(dir, "fires.log");
  const rng = new Prng(seed);
  const current = new Map<number, Replica>();
  const all: Replica[] = [];
  let generation = 0;
  let replacing = true;
  const start = (slot: number) => {
    const identity = `r${slot}.${generation++}`;
    const command = system.command({ dir, log, identity, skewMs: scenario.skews[slot]! });
    const child = spawn(command.file, command.args, { cwd: repo, stdio: ["ignore", "pipe", "ignore"] });
    const replica: Replica = { identity, child, out: "", exited: false };
    child.stdout?.on("data", (d: Buffer) => {
      replica.out += d.toString();
    });
    child.on("exit", () => {
      replica.exited = true;
      if (replacing && current.get(slot) === replica) start(slot);
    });
    current.set(slot, replica);
    all.push(replica);
  };
  for (let slot = 0; slot < 3; slot++) start(slot);
  const deadline = Date.now() + 120_000;
  while (![...current.values()].every((r) => r.out.includes("ready")) && Date.now() < deadline) await sleep(100);
  const from = Date.now() + EDGE_MS;
  const end = Date.now() + SECONDS * 1000;
  let faults = 0;
  while (Date.now() < end) {
    if (!scenario.chaos) {
      await sleep(Math.min(1000, end - Date.now()));
      continue;
    }
    await sleep(rng.between(2000, 5000));
    let victim = current.get(rng.int(0, 2));
    if (rng.chance(0.7)) {
      const lines = readFireLog(log);
      const last = lines.at(-1);
      if (last && last.event !== "end") victim = all.find((r) => r.identity === last.identity) ?? victim;
    }
    if (!victim || victim.exited || victim.child.pid === undefined) continue;
    faults++;
    if (rng.chance(0.5)) victim.child.kill("SIGKILL");
    else {
      victim.child.kill("SIGSTOP");
      await sleep(rng.between(1000, 6000));
      victim.child.kill("SIGCONT");
    }
  }
  // A little more, so a fire late in the window is run or settled (and reported) before the end.
  await sleep(EDGE_MS);
  replacing = false;
  for (const r of current.values()) r.child.kill("SIGKILL");
  await killMentioning(dir);
  const reported =
    system === leasehold
      ? new Set(
          all.flatMap((r) =>
            r.out
              .split("\n")
              .filter((l) => l.startsWith("{"))
              .flatMap((l) => (JSON.parse(l) as { missed: string[] }).missed.map((f) => Date.parse(f))),
          ),
        )
      : undefined;
  return { ...analyse(readFireLog(log), from, end - EDGE_MS, reported), faults };
}

/** Fires in [from, to] (whole seconds of the fire labels): run twice, not run; runs that overlapped. */
function analyse(
  lines: FireLine[],
  from: number,
  to: number,
  reported: Set<number> | undefined,
): Omit<Result, "faults"> {
  const starts = new Map<number, number>();
  const runs = new Map<string, { first: bigint; last: bigint }>();
  for (const l of lines) {
    const fire = Math.floor(l.fire / 1000) * 1000;
    if (l.event === "start") starts.set(fire, (starts.get(fire) ?? 0) + 1);
    const key = `${l.pid} ${fire}`;
    const r = runs.get(key);
    if (!r) runs.set(key, { first: l.at, last: l.at });
    else if (l.at > r.last) r.last = l.at;
  }
  let fires = 0;
  let twice = 0;
  let missed = 0;
  let settled = 0;
  for (let f = Math.ceil(from / 1000) * 1000; f <= to; f += 1000) {
    fires++;
    const n = starts.get(f) ?? 0;
    if (n > 1) twice++;
    if (n === 0) missed++;
    if (reported?.has(f)) settled++;
  }
  let overlaps = 0;
  let reach = -1n;
  for (const r of [...runs.values()].sort((a, b) => (a.first < b.first ? -1 : 1))) {
    if (r.first < reach) overlaps++;
    if (r.last > reach) reach = r.last;
  }
  return { fires, twice, missed, overlaps, reported: reported ? settled : undefined };
}

export async function run(): Promise<Table[]> {
  let peer: System | string;
  try {
    peer = await shedlock();
  } catch (error) {
    peer = `ShedLock could not be built here: ${String(error).slice(0, 200)}`;
  }
  const rows: Array<Array<string | number>> = [];
  const loads: string[] = [];
  const only = process.env.SCHEDULE_BENCH_SCENARIOS?.split(",");
  for (const [i, scenario] of SCENARIOS.entries()) {
    if (only && !only.some((o) => scenario.label.startsWith(o))) continue;
    const load = loadavg()[0]!.toFixed(1);
    const systems = [leasehold, ...(typeof peer === "string" ? [] : [peer])];
    const results = await Promise.all(systems.map((s) => runScenario(s, scenario, SEED + i)));
    loads.push(`${load}-${loadavg()[0]!.toFixed(1)}`);
    for (const [j, s] of systems.entries()) {
      const r = results[j]!;
      rows.push([
        s.label,
        scenario.label,
        scenario.chaos ? r.faults : "-",
        r.fires,
        r.twice,
        r.missed,
        r.reported === undefined ? "-" : r.reported,
        r.overlaps,
      ]);
    }
    if (typeof peer === "string") rows.push([peer, scenario.label, "-", "-", "-", "-", "-", "-"]);
  }
  return [
    {
      title: "Scheduled jobs: double runs and missed fires under chaos and clock skew",
      note: `Three replicas per system, one fire a second, ${WORK_MS} ms of work, ${SECONDS} s per scenario (fires of the middle ${SECONDS - (2 * EDGE_MS) / 1000} s counted), both systems at once, seed ${SEED}; lockAtMostFor ${AT_MOST_MS} ms (ShedLock: lockAtLeastFor ${AT_LEAST_MS} ms). 1-minute load average per scenario (start-end): ${loads.join(", ")} on ${"2"} cores.`,
      columns: ["system", "scenario", "faults", "fires", "ran twice", "not run", "reported missed", "overlapping runs"],
      rows,
    },
  ];
}
