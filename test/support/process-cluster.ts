/**
 * Test processes that report what they work on, and the checks of their work logs, shared by the
 * process tests of sharded groups (test/sharding/processes.test.ts) and of the Go module
 * (test/go/processes.test.ts). A process is any program that:
 * - prints one JSON line on stdout whenever the set of buckets it works on changes,
 *   `{"held":[...],"at":"<ns>"}` (the first one, empty, says it is ready), and may print other
 *   JSON lines (`{"event":...}`), kept in `events`;
 * - appends "<ns> <bucket> <term> <member> <pid>" to its log for each unit of work, the stamp
 *   being CLOCK_MONOTONIC (one clock for every process on the machine) taken before the process
 *   checked it still holds the bucket. A single lease is bucket 0.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Election, SafeWindow } from "../chaos/checker.js";
import type { BucketTrace } from "../chaos/sharded-checker.js";
import { repo } from "./cli-processes.js";

/** How to start one process of a cluster: the program and its arguments, given its member id and log. */
export type Command = (member: string, log: string) => { file: string; args: string[] };

export const ns = () => process.hrtime.bigint();
export const ms = (nanos: bigint) => Number(nanos) / 1e6;

/**
 * docs/sharding.md, "Over HTTP" and "Testing": after a crash, a pause past the lease or a (re)join,
 * the live members are balanced within 3 leases (waiting out the old session, the settle period,
 * the skew bound) plus two polls per hand-off batch and two more, for a joiner's ceil(N / M).
 */
export function shardBalanceBoundMs(buckets: number, members: number, leaseMs: number): number {
  const batches = Math.ceil(Math.ceil(buckets / members) / Math.ceil(buckets / 8));
  return 3 * leaseMs + (batches + 2) * 2 * (leaseMs / 3);
}

const shardWorker = join(repo, "test", "support", "shard-worker.ts");

/** A store URL as given, or a path as `sqlite:<path>`. */
const storeUrl = (db: string) => (/^[a-z0-9+]+:\/\//.test(db) ? db : `sqlite:${db}`);

/**
 * The API server as users run it, `leasehold serve` (the Node server), in its own process on
 * SQLite at `db` (or on the store URL `db`), with the skew bound `maxSkewMs` (one server: it only
 * delays takeovers).
 */
export async function startServeProcess(
  db: string,
  maxSkewMs: number,
  env: Record<string, string> = {},
): Promise<{ url: string; child: ChildProcess; stop: () => Promise<void> }> {
  const server = spawn(
    process.execPath,
    [join(repo, "bin", "leasehold.js"), "serve", "--port", "0", "--store", storeUrl(db), "--json"],
    {
      cwd: repo,
      env: { ...process.env, LEASEHOLD_STORE: "", LEASEHOLD_MAX_SKEW_MS: String(maxSkewMs), ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  // Read what it logs (a line per holder change), so a full pipe never blocks it.
  let serverLog = "";
  server.stderr?.on("data", (chunk: Buffer) => {
    serverLog = (serverLog + chunk.toString()).slice(-4000);
  });
  const serverExited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
  const stop = async () => {
    server.kill("SIGCONT");
    server.kill("SIGKILL");
    await serverExited;
  };
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    server.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) resolve((JSON.parse(line) as { url: string }).url);
    });
    void serverExited.then(() => reject(new Error(`the API server exited before it listened: ${serverLog}`)));
  });
  return { url, child: server, stop };
}

/** test/support/shard-worker.ts as a cluster's process: a library member on SQLite, or a remote member of the API. */
export function shardWorkerCommand(
  mode: "sqlite" | "http",
  target: string,
  group: string,
  leaseMs: number,
  buckets: number,
): Command {
  return (member, log) => ({
    file: process.execPath,
    args: ["--import", "tsx", shardWorker, mode, target, group, member, log, String(leaseMs), String(buckets)],
  });
}

export interface Incarnation {
  /** member id + start number: a restarted member is a new process, with a log of its own. */
  name: string;
  member: string;
  child: ChildProcess;
  log: string;
  held: { buckets: number[]; at: bigint };
  paused: boolean;
  dead: boolean;
  exited: Promise<void>;
  /** Every other JSON line it printed, in order. */
  events: Array<Record<string, unknown>>;
}

export interface Balance {
  /** hrtime of the held-change that completed the balance. */
  at: bigint;
  loads: number[];
}

/** The processes of one run, their output, and waits on it. */
export class Cluster {
  readonly incarnations: Incarnation[] = [];
  /** Workers that ended without being killed (none expected). */
  readonly crashes: string[] = [];
  private readonly waiters = new Set<() => void>();
  private starts = 0;

  constructor(
    private readonly dir: string,
    /** The group's bucket count (1 for a single lease). */
    private readonly buckets: number,
    private readonly command: Command,
  ) {}

  start(member: string): Incarnation {
    const name = `${member}.${this.starts++}`;
    const log = join(this.dir, `${name}.log`);
    const { file, args } = this.command(member, log);
    const child = spawn(file, args, { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
    const inc: Incarnation = {
      name,
      member,
      child,
      log,
      held: { buckets: [], at: 0n },
      paused: false,
      dead: false,
      events: [],
      exited: new Promise((resolve) => child.once("exit", () => resolve())),
    };
    let pending = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      let newline = pending.indexOf("\n");
      while (newline >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        const parsed = JSON.parse(line) as { held?: number[]; at: string };
        if (parsed.held) inc.held = { buckets: parsed.held, at: BigInt(parsed.at) };
        else inc.events.push(parsed);
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
    if (owner.size !== this.buckets) return undefined;
    const loads = live.map((i) => i.held.buckets.length);
    const floor = Math.floor(this.buckets / live.length);
    if (loads.some((l) => l < floor || l > Math.ceil(this.buckets / live.length))) return undefined;
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

  /**
   * The CLOCK_MONOTONIC stamp of `inc`'s first line (it is ready: started and listening to its
   * group), once it printed it. Starting a process (tsx, on loaded cores: seconds) is not part of
   * any bound of the protocol, so the bounds count from here.
   */
  ready(inc: Incarnation, timeoutMs = 60_000): Promise<bigint> {
    return this.waitFor(`${inc.name} ready`, () => (inc.held.at > 0n ? inc.held.at : undefined), timeoutMs);
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

export interface WorkLine {
  at: bigint;
  bucket: number;
  term: number;
  incarnation: string;
  member: string;
}

export function readWork(incarnations: Incarnation[]): WorkLine[] {
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
export function termsGoBackwards(lines: WorkLine[]): string[] {
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
export function traceOf(lines: WorkLine[]): Map<number, BucketTrace> {
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
