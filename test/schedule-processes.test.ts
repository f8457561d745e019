/**
 * Scheduled jobs with real processes and real signals (docs/schedule.md, "What is tested"), checked
 * from the commands' own output on one clock: each run's command appends "start", "tick" (every
 * 20 ms) and "end" lines with its term, its fire and CLOCK_MONOTONIC to one shared log
 * (test/support/fire-writer.ts); the file's order is the order the writes happened.
 *
 * - Three `leasehold cron` replicas of a job firing every second, on one SQLite file, for a minute
 *   of chaos: a seeded fault every few seconds, SIGKILL of a replica (restarted, as a supervisor
 *   would) or SIGSTOP for up to 6 s, most of them while it runs a command; the replicas' wall
 *   clocks are 0, 3 s ahead and 4 s behind (libfaketime, monotonic clock untouched). Checked: no
 *   fire ran twice, no line of a run after the next run's first (no overlap, terms only grew),
 *   every fire was run or reported missed, and each missed fire was reported once.
 * - A run that outlives `--at-most` is stopped there (SIGKILL from its guard) with no overlap, and
 *   a replica paused past its run's window does nothing of that run after it wakes.
 * - An at-least-once trigger: each fire delivered twice to each of two replicas (and once more
 *   after its run ended), each delivery its own `runFire` call: each fire runs once.
 *
 * Seeded (CRON_SEED, default 7): the faults and when. What the kernel does with time is not.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Prng } from "./chaos/prng.js";
import { type Cli, CliProcesses, killMentioning, repo, until } from "./support/cli-processes.js";
import { type FireLine, fireWriterCommand, missedFires, notStartedFires, readFireLog } from "./support/fire-writer.js";
import { termOverlaps } from "./support/term-writer.js";

const SEED = Number(process.env.CRON_SEED ?? 7);
const CHAOS_MS = 60_000;
const WORK_MS = 200;
const root = mkdtempSync(join(tmpdir(), "leasehold-cron-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Debian's libfaketime (package `faketime`, installed by .ci/run). */
const FAKETIME_LIB = [
  "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
  "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
].find(existsSync);

/** A wall clock `offsetS` seconds off, every other clock of the process left alone. */
function skewed(offsetS: number): Record<string, string> {
  if (offsetS === 0) return {};
  if (!FAKETIME_LIB) throw new Error("libfaketime not found: apt-get install -y faketime (.ci/run installs it)");
  return {
    LD_PRELOAD: FAKETIME_LIB,
    FAKETIME: `${offsetS > 0 ? "+" : ""}${offsetS}`,
    FAKETIME_DONT_FAKE_MONOTONIC: "1",
  };
}

interface Replica {
  slot: number;
  identity: string;
  cli: Cli;
  exited: boolean;
}

/** Replicas of one `leasehold cron` line in one directory; a replica that ends is started again. */
class CronCluster {
  readonly dir = mkdtempSync(join(root, "t-"));
  readonly log = join(this.dir, "fires.log");
  readonly url = `sqlite:${join(this.dir, "jobs.db")}`;
  readonly procs = new CliProcesses();
  readonly current = new Map<number, Replica>();
  readonly all: Replica[] = [];
  private generation = 0;
  replacing = true;

  private readonly command: string[];

  constructor(
    private readonly skews: number[],
    private readonly flags: string[],
    commandOf: (log: string) => string[],
  ) {
    this.command = commandOf(this.log);
    for (const slot of skews.keys()) this.start(slot);
  }

  start(slot: number): Replica {
    const identity = `r${slot}.${this.generation++}`;
    const cli = this.procs.start(
      [
        "cron",
        "--store",
        this.url,
        "--name",
        "jobs/every-second",
        "--schedule",
        "* * * * * *",
        "--identity",
        identity,
        ...this.flags,
        "--",
        ...this.command,
      ],
      skewed(this.skews[slot] ?? 0),
    );
    const replica: Replica = { slot, identity, cli, exited: false };
    this.current.set(slot, replica);
    this.all.push(replica);
    void cli.exited.then(() => {
      replica.exited = true;
      if (this.replacing && this.current.get(slot) === replica) this.start(slot);
    });
    return replica;
  }

  lines(): FireLine[] {
    return readFireLog(this.log);
  }

  byIdentity(identity: string): Replica | undefined {
    return this.all.find((r) => r.identity === identity);
  }

  /** SIGTERM to every replica still running (each exits 143 once its command is done), then kill leftovers. */
  async stop(): Promise<Array<{ code: number | null; signal: NodeJS.Signals | null }>> {
    this.replacing = false;
    const live = [...this.current.values()].filter((r) => !r.exited);
    for (const r of live) {
      r.cli.child.kill("SIGCONT");
      r.cli.child.kill("SIGTERM");
    }
    const exits = await Promise.all(live.map((r) => r.cli.exited));
    await killMentioning(this.dir);
    return exits;
  }

  stderr(): string {
    return this.all.map((r) => r.cli.stderr()).join("\n");
  }
}

/**
 * The checks of every test, from the commands' lines and the replicas' reports: `missed` (each
 * reported once), and `notStarted`, fires whose run began but whose command the wrapper reported
 * it could not start before its window closed (a guard slow to start on a loaded machine).
 */
function checkRuns(
  lines: FireLine[],
  missed: Array<{ fire: number; reason: string }>,
  notStarted: Array<{ fire: number; reason: string }> = [],
) {
  const starts = lines.filter((l) => l.event === "start");
  const perFire = new Map<number, FireLine[]>();
  for (const s of starts) perFire.set(s.fire, [...(perFire.get(s.fire) ?? []), s]);
  const twice = [...perFire]
    .filter(([, s]) => s.length > 1)
    .map(([f, s]) => `${new Date(f).toISOString()} x${s.length}`);
  expect(twice, "fires that ran twice").toEqual([]);
  expect(termOverlaps(lines), "a run's lines after a later run began").toEqual([]);
  const reported = new Map<number, string[]>();
  for (const m of missed) reported.set(m.fire, [...(reported.get(m.fire) ?? []), m.reason]);
  const twiceReported = [...reported].filter(([, r]) => r.length > 1).map(([f]) => new Date(f).toISOString());
  expect(twiceReported, "fires reported missed more than once").toEqual([]);
  for (const n of notStarted) if (!reported.has(n.fire)) reported.set(n.fire, [n.reason]);
  const fires = [...perFire.keys()].sort((a, b) => a - b);
  const unaccounted: string[] = [];
  const ranAndMissed: string[] = [];
  for (let f = fires[0]!; f <= fires.at(-1)!; f += 1000) {
    const ran = perFire.has(f);
    const why = reported.get(f)?.[0];
    if (!ran && why === undefined) unaccounted.push(new Date(f).toISOString());
    if (ran && why !== undefined && why !== "crashed") ranAndMissed.push(`${new Date(f).toISOString()} (${why})`);
  }
  expect(unaccounted, "fires neither run nor reported missed").toEqual([]);
  expect(ranAndMissed, "fires both run and reported missed, other than crashed runs").toEqual([]);
  const byReason = new Map<string, number>();
  for (const m of [...missed, ...notStarted]) byReason.set(m.reason, (byReason.get(m.reason) ?? 0) + 1);
  return { fires: fires.length, span: (fires.at(-1)! - fires[0]!) / 1000 + 1, byReason };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("leasehold cron: once per fire across replicas, with real processes", () => {
  it("three replicas firing every second for a minute, SIGKILL and SIGSTOP chaos, wall clocks 3 s ahead and 4 s behind: no fire twice, no overlap, every fire run or reported missed", async ({
    onTestFinished,
  }) => {
    const rng = new Prng(SEED);
    const cluster = new CronCluster([0, 3, -4], ["--at-most", "3s"], (log) => fireWriterCommand(log, WORK_MS));
    onTestFinished(() => killMentioning(cluster.dir));
    await until("the first run", () => cluster.lines().length > 0, 60_000);
    const faults: string[] = [];
    const chaosEnd = performance.now() + CHAOS_MS;
    while (performance.now() < chaosEnd) {
      await sleep(rng.between(2000, 5000));
      // Most faults hit the replica running a command, in the middle of its run.
      let victim = cluster.current.get(rng.int(0, 2));
      if (rng.chance(0.7)) {
        const seen = cluster.lines().length;
        const started = await until(
          "a run to start",
          () =>
            cluster
              .lines()
              .slice(seen)
              .find((l) => l.event === "start"),
          20_000,
        );
        await sleep(rng.between(20, 150));
        victim = cluster.byIdentity(started.identity) ?? victim;
      }
      if (!victim || victim.exited) continue;
      const pid = victim.cli.child.pid!;
      if (rng.chance(0.5)) {
        process.kill(pid, "SIGKILL");
        faults.push(`SIGKILL ${victim.identity}`);
      } else {
        const pauseMs = rng.between(1000, 6000);
        process.kill(pid, "SIGSTOP");
        faults.push(`SIGSTOP ${victim.identity} ${(pauseMs / 1000).toFixed(1)} s`);
        await sleep(pauseMs);
        process.kill(pid, "SIGCONT");
      }
    }
    // Calm: every replica up and running, long enough for a crashed run's record to be taken
    // over (its lease, 3.3 s, observed) and the fires before it settled.
    await sleep(10_000);
    const live = [...cluster.current.values()];
    for (const r of live) await until(`${r.identity} to be up`, () => /scheduling "/.test(r.cli.stderr()), 30_000);
    const exits = await cluster.stop();
    const lines = cluster.lines();
    if (process.env.CRON_DEBUG) {
      const { writeFileSync, copyFileSync } = await import("node:fs");
      writeFileSync(
        `${process.env.CRON_DEBUG}/stderr.txt`,
        cluster.all.map((r) => `=== ${r.identity}\n${r.cli.stderr()}`).join("\n"),
      );
      copyFileSync(cluster.log, `${process.env.CRON_DEBUG}/fires.log`);
    }
    const missed = missedFires(cluster.stderr());
    const result = checkRuns(lines, missed, notStartedFires(cluster.stderr()));
    console.log(
      `cron chaos (seed ${SEED}): ${result.fires} fires run of ${result.span} in ${((CHAOS_MS + 10_000) / 1000).toFixed(0)} s; missed ${JSON.stringify(Object.fromEntries(result.byReason))}; faults: ${faults.join(", ")}`,
    );
    expect(faults.length).toBeGreaterThanOrEqual(10);
    expect(result.fires).toBeGreaterThan(30);
    // Each replica still running at the end stopped on SIGTERM like `leasehold run` stopped while waiting: 143.
    expect(exits, live.map((r) => r.cli.stderr().slice(-400)).join(" | ")).toEqual(
      live.map(() => ({ code: 143, signal: null })),
    );
  }, 180_000);

  it("a run that outlives --at-most is stopped there by its guard, and a replica paused past its run's window does nothing of that run after it wakes", async ({
    onTestFinished,
  }) => {
    // Each run would take 4 s and ignores SIGTERM: its guard SIGKILLs it at --at-most (1500 ms).
    const cluster = new CronCluster([0, 0], ["--at-most", "1500ms", "--grace", "200ms"], (log) =>
      fireWriterCommand(log, 4000, "ignore"),
    );
    onTestFinished(() => killMentioning(cluster.dir));
    const runs = () => [...new Set(cluster.lines().map((l) => l.term))];
    await until("two runs stopped at --at-most", () => runs().length >= 3, 60_000);
    // Pause the replica running the latest run, until a later run has begun elsewhere.
    const top = Math.max(...runs());
    const paused = cluster.byIdentity(cluster.lines().find((l) => l.term === top)!.identity)!;
    process.kill(paused.cli.child.pid!, "SIGSTOP");
    await until("a run after the paused one", () => runs().some((t) => t > top), 30_000);
    await sleep(1500);
    process.kill(paused.cli.child.pid!, "SIGCONT");
    await sleep(4000);
    await cluster.stop();
    const lines = cluster.lines();
    checkRuns(lines, missedFires(cluster.stderr()), notStartedFires(cluster.stderr()));
    // Every run was stopped by its guard: none wrote its "end" (it would take 4 s).
    expect(lines.filter((l) => l.event === "end")).toEqual([]);
    expect(cluster.stderr()).toMatch(/the guard sent SIGKILL to the command/);
    expect(cluster.stderr()).toMatch(/still running at --at-most/);
    // The paused run wrote nothing once the next run had begun (termOverlaps above), and none of it came after its wrapper woke.
    const next = lines.find((l) => l.term > top)!;
    expect(lines.filter((l) => l.term === top && l.seq > next.seq)).toEqual([]);
  }, 120_000);

  it("an at-least-once trigger delivers each fire twice to each of two replicas, and once more after its run: each fire runs once", async ({
    onTestFinished,
  }) => {
    const dir = mkdtempSync(join(root, "t-"));
    onTestFinished(() => killMentioning(dir));
    const log = join(dir, "fires.log");
    const url = `sqlite:${join(dir, "jobs.db")}`;
    const rng = new Prng(SEED + 1);
    const workers = ["a", "b"].map((id) => {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", join(repo, "test/support/fire-worker.ts"), url, "jobs/delivered", log, id, "300"],
        { cwd: repo, stdio: ["pipe", "pipe", "pipe"] },
      );
      let out = "";
      let err = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
      });
      child.stderr.on("data", (d: Buffer) => {
        err += d.toString();
      });
      return { id, child, out: () => out, err: () => err };
    });
    const results = () =>
      workers.flatMap((w) =>
        w
          .out()
          .split("\n")
          .filter((l) => l !== "")
          .map((l) => JSON.parse(l) as { fire: string; status?: string; error?: string }),
      );
    await until("both replicas ready", () => workers.every((w) => w.err().includes("ready")), 60_000);
    const FIRES = 10;
    const first = Math.ceil(Date.now() / 1000) * 1000 + 2000;
    const deliver = (w: (typeof workers)[number], fire: number) =>
      w.child.stdin.write(`${new Date(fire).toISOString()}\n`);
    for (let i = 0; i < FIRES; i++) {
      const fire = first + i * 1000;
      await sleep(Math.max(0, fire - Date.now()));
      // Two deliveries to each replica, a few hundred ms apart, then one more after the run.
      for (const w of workers) deliver(w, fire);
      setTimeout(
        () => {
          for (const w of workers) deliver(w, fire);
        },
        rng.between(20, 400),
      );
      setTimeout(() => deliver(workers[rng.int(0, 1)]!, fire), 900);
    }
    await until("every delivery's result", () => results().length >= FIRES * 5, 60_000);
    for (const w of workers) w.child.kill("SIGKILL");
    const all = results();
    expect(all.filter((r) => r.error !== undefined)).toEqual([]);
    const ran = all.filter((r) => r.status === "ran").map((r) => r.fire);
    expect(ran.sort()).toEqual(Array.from({ length: FIRES }, (_, i) => new Date(first + i * 1000).toISOString()));
    expect(new Set(all.map((r) => r.status))).toEqual(new Set(["ran", "skipped-held", "skipped-done"]));
    const lines = readFireLog(log);
    checkRuns(lines, []);
    expect(lines.filter((l) => l.event === "start")).toHaveLength(FIRES);
  }, 90_000);
});
