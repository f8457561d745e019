/**
 * Sharded leadership with real OS processes and real signals (docs/sharding.md, "Testing"): four
 * members (test/support/shard-worker.ts) share 16 buckets, once as library members on one SQLite
 * file and once as remote members of the HTTP API (the Node server, `leasehold serve`, in its own
 * process). The test SIGKILLs members (restarting them under the same id, later or at once) and
 * SIGSTOPs one until the others have taken its buckets, then SIGCONTs it.
 *
 * Every line of work a process writes carries its bucket, term and CLOCK_MONOTONIC stamp
 * (`process.hrtime.bigint()`, one clock for every process on the machine). From those lines alone:
 * - no bucket's term-T line follows, on that clock, a line of a higher term for that bucket;
 * - no two processes work on one bucket in overlapping intervals, one process per bucket term
 *   (the chaos harness's own checker, test/chaos/sharded-checker.ts, run on the logs);
 * - after each fault the live members balance (each floor or ceil of 16 / M buckets, every bucket
 *   once) within the bound docs/sharding.md states, from the fault (or the restart) to the last
 *   change of held buckets that completed the balance, as the processes reported it.
 *
 * The schedule is seeded (SHARD_PROCESS_SEED, default 5): the order of the faults, their victims
 * and how many lines each victim writes first. Nothing waits on a timer: every step waits for the
 * processes' own output, within the documented bound.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Election, SafeWindow } from "../chaos/checker.js";
import { Prng } from "../chaos/prng.js";
import { type BucketTrace, checkShardedTrace } from "../chaos/sharded-checker.js";
import { repo } from "../support/cli-processes.js";

const BUCKETS = 16;
const MEMBERS = 4;
const LEASE_MS = 1000;
/** The API server's skew bound for this test: one server, so it only delays takeovers. */
const MAX_SKEW_MS = 100;
const SEED = Number(process.env.SHARD_PROCESS_SEED ?? 5);
/** Forming the group from four cold processes (tsx start-up on loaded cores): not a documented bound. */
const FORMING_MS = 60_000;

/**
 * docs/sharding.md, "Over HTTP" and "Testing": after a crash, a pause past the lease or a (re)join,
 * the live members are balanced within 3 leases (waiting out the old session, the settle period,
 * the skew bound) plus two polls per hand-off batch and two more, for a joiner's ceil(N / M).
 */
function balanceBoundMs(members: number): number {
  const batches = Math.ceil(Math.ceil(BUCKETS / members) / Math.ceil(BUCKETS / 8));
  return 3 * LEASE_MS + (batches + 2) * 2 * (LEASE_MS / 3);
}

const root = mkdtempSync(join(tmpdir(), "leasehold-shard-procs-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const worker = join(repo, "test", "support", "shard-worker.ts");
const ns = () => process.hrtime.bigint();
const ms = (nanos: bigint) => Number(nanos) / 1e6;

interface Incarnation {
  /** member id + start number: a restarted member is a new process, with a log of its own. */
  name: string;
  member: string;
  child: ChildProcess;
  log: string;
  held: { buckets: number[]; at: bigint };
  paused: boolean;
  dead: boolean;
  exited: Promise<void>;
}

interface Balance {
  /** hrtime of the held-change that completed the balance. */
  at: bigint;
  loads: number[];
}

/** The processes of one run, their output, and waits on it. */
class Cluster {
  readonly incarnations: Incarnation[] = [];
  /** Workers that ended without being killed (none expected). */
  readonly crashes: string[] = [];
  private readonly waiters = new Set<() => void>();
  private starts = 0;

  constructor(
    private readonly dir: string,
    private readonly mode: "sqlite" | "http",
    private readonly target: string,
  ) {}

  start(member: string): Incarnation {
    const name = `${member}.${this.starts++}`;
    const log = join(this.dir, `${name}.log`);
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        worker,
        this.mode,
        this.target,
        "procs/group",
        member,
        log,
        String(LEASE_MS),
        String(BUCKETS),
      ],
      { cwd: repo, stdio: ["ignore", "pipe", "pipe"] },
    );
    const inc: Incarnation = {
      name,
      member,
      child,
      log,
      held: { buckets: [], at: 0n },
      paused: false,
      dead: false,
      exited: new Promise((resolve) => child.once("exit", () => resolve())),
    };
    let pending = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      let newline = pending.indexOf("\n");
      while (newline >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        const { held, at } = JSON.parse(line) as { held: number[]; at: string };
        inc.held = { buckets: held, at: BigInt(at) };
        newline = pending.indexOf("\n");
      }
      this.notify();
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    void inc.exited.then(() => {
      if (!inc.dead) this.crashes.push(`${name} exited by itself: ${stderr}`);
    });
    this.incarnations.push(inc);
    return inc;
  }

  live(): Incarnation[] {
    return this.incarnations.filter((i) => !i.dead && !i.paused);
  }

  /** Every bucket held by exactly one live member, loads floor/ceil of N / M. */
  balanced(): Balance | undefined {
    const live = this.live();
    const owner = new Map<number, string>();
    for (const inc of live) {
      for (const b of inc.held.buckets) {
        if (owner.has(b)) return undefined;
        owner.set(b, inc.name);
      }
    }
    if (owner.size !== BUCKETS) return undefined;
    const loads = live.map((i) => i.held.buckets.length);
    const floor = Math.floor(BUCKETS / live.length);
    if (loads.some((l) => l < floor || l > Math.ceil(BUCKETS / live.length))) return undefined;
    let at = 0n;
    for (const inc of live) if (inc.held.at > at) at = inc.held.at;
    return { at, loads };
  }

  /** Resolves with `check`'s first value, re-evaluated on every line the processes print (and on `poll`). */
  waitFor<T>(what: string, check: () => T | undefined, timeoutMs: number, pollMs?: number): Promise<T> {
    return new Promise((resolve, reject) => {
      let poll: NodeJS.Timeout | undefined;
      const done = (finish: () => void) => {
        this.waiters.delete(waiter);
        clearTimeout(timer);
        clearInterval(poll);
        finish();
      };
      const waiter = () => {
        const value = check();
        if (value !== undefined) done(() => resolve(value));
      };
      const timer = setTimeout(
        () =>
          done(() =>
            reject(
              new Error(
                `not ${what} within ${timeoutMs} ms: ${this.incarnations.map((i) => `${i.name}${i.dead ? " (dead)" : i.paused ? " (paused)" : ""}=[${i.held.buckets}]`).join(" ")}`,
              ),
            ),
          ),
        timeoutMs,
      );
      if (pollMs) poll = setInterval(waiter, pollMs);
      this.waiters.add(waiter);
      waiter();
    });
  }

  /** Once `inc` has written `lines` more lines of work than now (about 36 bytes each). */
  async linesWritten(inc: Incarnation, lines: number): Promise<void> {
    const size = () => (existsSync(inc.log) ? statSync(inc.log).size : 0);
    const target = size() + lines * 36;
    await this.waitFor(`${inc.name} writing ${lines} lines`, () => (size() >= target ? true : undefined), 30_000, 20);
  }

  async kill(inc: Incarnation): Promise<bigint> {
    inc.dead = true;
    const at = ns();
    inc.child.kill("SIGKILL");
    await inc.exited;
    return at;
  }

  /** Every process this run started, by pid: woken, killed, reaped. */
  async close(): Promise<void> {
    for (const inc of this.incarnations) {
      inc.dead = true;
      if (inc.child.exitCode === null && inc.child.signalCode === null) {
        inc.child.kill("SIGCONT");
        inc.child.kill("SIGKILL");
      }
    }
    await Promise.all(this.incarnations.map((i) => i.exited));
  }

  private notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

interface WorkLine {
  at: bigint;
  bucket: number;
  term: number;
  incarnation: string;
  member: string;
}

function readWork(incarnations: Incarnation[]): WorkLine[] {
  return incarnations.flatMap((inc) =>
    existsSync(inc.log)
      ? readFileSync(inc.log, "utf8")
          .split("\n")
          // A SIGKILL can cut the last line short.
          .filter((l) => /^\d+ \d+ \d+ \S+ \d+$/.test(l))
          .map((l) => {
            const [at, bucket, term, member] = l.split(" ");
            return {
              at: BigInt(at!),
              bucket: Number(bucket),
              term: Number(term),
              incarnation: inc.name,
              member: member!,
            };
          })
      : [],
  );
}

/** No line of a bucket's term T after (on the one clock) a line of a higher term of that bucket. */
function termsGoBackwards(lines: WorkLine[]): string[] {
  const out: string[] = [];
  const highest = new Map<number, WorkLine>();
  for (const line of [...lines].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))) {
    const top = highest.get(line.bucket);
    if (top && line.term < top.term) {
      out.push(
        `bucket ${line.bucket}: ${line.incarnation} wrote term ${line.term} ${ms(line.at - top.at).toFixed(3)} ms after ${top.incarnation}'s term ${top.term}`,
      );
    } else if (!top || line.term > top.term) highest.set(line.bucket, line);
  }
  return out;
}

/**
 * The logs as the chaos checker's trace: per bucket, a window per process and term from its first
 * line to its last, an election at each window's first line, and the member each term's lines name.
 */
function traceOf(lines: WorkLine[]): Map<number, BucketTrace> {
  const windows = new Map<string, SafeWindow & { bucket: number; member: string }>();
  for (const l of lines) {
    const key = `${l.incarnation}/${l.bucket}/${l.term}`;
    const at = ms(l.at);
    const w = windows.get(key);
    if (!w) {
      windows.set(key, {
        candidate: l.incarnation,
        term: l.term,
        start: at,
        end: at + 1e-6,
        bucket: l.bucket,
        member: l.member,
      });
    } else {
      w.start = Math.min(w.start, at);
      w.end = Math.max(w.end, at + 1e-6);
    }
  }
  const trace = new Map<number, BucketTrace>();
  for (const w of windows.values()) {
    let t = trace.get(w.bucket);
    if (!t) {
      t = { elections: [], windows: [], storeWrites: [], fenced: [] };
      trace.set(w.bucket, t);
    }
    t.windows.push({ candidate: w.candidate, term: w.term, start: w.start, end: w.end });
    t.elections.push({ candidate: w.candidate, identity: w.member, term: w.term, at: w.start } satisfies Election);
    // What the processes' lines say each term was given to (the logs are all this test has): a
    // term claimed for two member ids shows up as "applied for two holders".
    t.storeWrites.push({ holder: w.member, term: w.term });
  }
  for (const t of trace.values()) t.elections.sort((a, b) => a.at - b.at);
  return trace;
}

type Fault = "kill" | "kill-restart" | "pause";

interface Measured {
  fault: Fault;
  victim: string;
  /** From the fault to balanced over the others (kill, pause), ms. */
  absorbedMs?: number;
  /** From the restart / SIGCONT (kill-restart: the fault) to balanced over all four, ms. */
  rejoinedMs: number;
}

async function runFaults(cluster: Cluster, rng: Prng): Promise<Measured[]> {
  const formed = await cluster.waitFor("balanced over 4 (forming)", () => cluster.balanced(), FORMING_MS);
  expect(formed.loads).toEqual([4, 4, 4, 4]);
  const faults: Fault[] = ["kill", "pause", "kill-restart"];
  for (let i = faults.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [faults[i], faults[j]] = [faults[j]!, faults[i]!];
  }
  const measured: Measured[] = [];
  for (const fault of faults) {
    const victim = rng.pick(cluster.live());
    await cluster.linesWritten(victim, rng.int(5, 40));
    const three = balanceBoundMs(MEMBERS - 1);
    const four = balanceBoundMs(MEMBERS);
    if (fault === "pause") {
      const at = ns();
      victim.child.kill("SIGSTOP");
      victim.paused = true;
      const absorbed = await cluster.waitFor(
        `balanced over 3 with ${victim.name} paused`,
        () => cluster.balanced(),
        three,
      );
      const cont = ns();
      victim.paused = false;
      victim.child.kill("SIGCONT");
      const back = await cluster.waitFor(`balanced over 4 after ${victim.name} woke`, () => cluster.balanced(), four);
      measured.push({ fault, victim: victim.name, absorbedMs: ms(absorbed.at - at), rejoinedMs: ms(back.at - cont) });
    } else if (fault === "kill") {
      const at = await cluster.kill(victim);
      const absorbed = await cluster.waitFor(
        `balanced over 3 after ${victim.name} was killed`,
        () => cluster.balanced(),
        three,
      );
      const restartAt = ns();
      cluster.start(victim.member);
      const back = await cluster.waitFor(
        `balanced over 4 after ${victim.member} restarted`,
        () => cluster.balanced(),
        four,
      );
      measured.push({
        fault,
        victim: victim.name,
        absorbedMs: ms(absorbed.at - at),
        rejoinedMs: ms(back.at - restartAt),
      });
    } else {
      // Restarted at once under the same id: the new process waits out the old session first.
      const at = await cluster.kill(victim);
      cluster.start(victim.member);
      const back = await cluster.waitFor(
        `balanced over 4 after ${victim.member} was killed and restarted at once`,
        () => cluster.balanced(),
        four,
      );
      measured.push({ fault, victim: victim.name, rejoinedMs: ms(back.at - at) });
    }
  }
  return measured;
}

function checkLogs(cluster: Cluster, label: string, measured: Measured[]): void {
  const lines = readWork(cluster.incarnations);
  const trace = traceOf(lines);
  const summary = measured
    .map(
      (m) =>
        `${m.fault} ${m.victim}: ${m.absorbedMs === undefined ? "" : `others balanced ${m.absorbedMs.toFixed(0)} ms after the fault, `}all four ${m.rejoinedMs.toFixed(0)} ms after ${m.fault === "kill-restart" ? "the fault" : m.fault === "pause" ? "SIGCONT" : "the restart"}`,
    )
    .join("; ");
  console.log(
    `${label} (seed ${SEED}, lease ${LEASE_MS} ms, bounds ${balanceBoundMs(3).toFixed(0)}/${balanceBoundMs(4).toFixed(0)} ms): ${summary}; ${lines.length} lines of work, ${[...trace.values()].reduce((n, t) => n + t.elections.length, 0)} bucket tenures`,
  );
  expect(cluster.crashes).toEqual([]);
  expect(termsGoBackwards(lines), `seed ${SEED}`).toEqual([]);
  expect(checkShardedTrace({ buckets: trace, countOf: new Map(), keys: [] }), `seed ${SEED}`).toEqual([]);
  // Every bucket was worked on, and by more than one process over the run (the faults moved them).
  expect([...trace.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: BUCKETS }, (_, b) => b));
  expect(measured).toHaveLength(3);
}

describe("sharded leadership across OS processes: SIGKILL, SIGSTOP past the lease, restarts", () => {
  it("the 'one clock' checks find a term written after a higher one and two processes in one bucket at once", () => {
    const line = (at: number, bucket: number, term: number, incarnation: string): WorkLine => ({
      at: BigInt(at) * 1_000_000n,
      bucket,
      term,
      incarnation,
      member: incarnation.split(".")[0]!,
    });
    expect(termsGoBackwards([line(1, 0, 1, "a.0"), line(5, 0, 2, "b.0"), line(6, 1, 1, "a.0")])).toEqual([]);
    expect(termsGoBackwards([line(1, 0, 1, "a.0"), line(5, 0, 2, "b.0"), line(6, 0, 1, "a.0")])).toEqual([
      "bucket 0: a.0 wrote term 1 1.000 ms after b.0's term 2",
    ]);
    const overlap = traceOf([line(1, 0, 1, "a.0"), line(4, 0, 2, "b.0"), line(3, 0, 1, "a.0"), line(6, 0, 2, "b.0")]);
    expect(checkShardedTrace({ buckets: overlap, countOf: new Map(), keys: [] })).toEqual([]);
    const twice = traceOf([line(1, 0, 1, "a.0"), line(4, 0, 2, "b.0"), line(5, 0, 1, "a.0")]);
    expect(checkShardedTrace({ buckets: twice, countOf: new Map(), keys: [] }).join("\n")).toContain(
      "two candidates inside their safe windows at once",
    );
  });

  it("library members on one SQLite file", async ({ onTestFinished }) => {
    const dir = mkdtempSync(join(root, "sqlite-"));
    const cluster = new Cluster(dir, "sqlite", join(dir, "group.db"));
    onTestFinished(() => cluster.close());
    for (let i = 0; i < MEMBERS; i++) cluster.start(`m${i}`);
    const measured = await runFaults(cluster, new Prng(SEED));
    await cluster.close();
    checkLogs(cluster, "SQLite", measured);
  }, 180_000);

  it("remote members of the HTTP API (the Node server in its own process)", async ({ onTestFinished }) => {
    const dir = mkdtempSync(join(root, "http-"));
    const server = spawn(
      process.execPath,
      [join(repo, "bin", "leasehold.js"), "serve", "--port", "0", "--store", `sqlite:${join(dir, "api.db")}`, "--json"],
      {
        cwd: repo,
        env: { ...process.env, LEASEHOLD_STORE: "", LEASEHOLD_MAX_SKEW_MS: String(MAX_SKEW_MS) },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    // Read what it logs (a line per holder change), so a full pipe never blocks it.
    let serverLog = "";
    server.stderr?.on("data", (chunk: Buffer) => {
      serverLog = (serverLog + chunk.toString()).slice(-4000);
    });
    const serverExited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
    onTestFinished(async () => {
      server.kill("SIGKILL");
      await serverExited;
    });
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      server.stdout?.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const line = out.split("\n")[0];
        if (out.includes("\n") && line) resolve((JSON.parse(line) as { url: string }).url);
      });
      void serverExited.then(() => reject(new Error(`the API server exited before it listened: ${serverLog}`)));
    });
    const cluster = new Cluster(dir, "http", url);
    onTestFinished(() => cluster.close());
    for (let i = 0; i < MEMBERS; i++) cluster.start(`m${i}`);
    const measured = await runFaults(cluster, new Prng(SEED + 1));
    await cluster.close();
    checkLogs(cluster, "HTTP API", measured);
  }, 180_000);
});
