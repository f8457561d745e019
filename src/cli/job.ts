/**
 * The leader's command, run under a guard process that holds the lease's deadline, so the command
 * cannot outlive the lease whatever happens to `leasehold run` (docs/cli.md, "What stops the command").
 *
 * Processes and groups:
 *   wrapper (`leasehold run`, in the caller's process group)
 *     └─ guard (`node -e GUARD_SOURCE`, spawned `detached`: a session and process group of its own, G)
 *          └─ command, and whatever it starts, in group G
 *   A signal aimed at the wrapper's group (a supervisor's or terminal's `kill -9 -PGID`) misses G; a
 *   SIGKILL aimed at G takes the command and the guard together (nothing is left unsupervised). The
 *   wrapper knows G from the moment it spawns the guard (G is the guard's pid), before the command
 *   has even started, and signals G directly rather than through the guard, so a stopped guard does
 *   not stop the wrapper's signals.
 *
 * The deadline: when the guard is ready (it starts the command only then) and on every renewal, the
 * wrapper sends the guard the instant the safe window closes (the elector's `leaderUntil`,
 * `sentAt + leaseMs - safetyMs`), as an absolute CLOCK_MONOTONIC time in nanoseconds. `process.hrtime.bigint()` reads the same system-wide
 * monotonic clock in every process on Linux (CLOCK_MONOTONIC) and macOS (mach_absolute_time), so the
 * deadline is converted once, in the wrapper, and IPC latency never stretches it. The guard, on its
 * own clock and with no help from the wrapper:
 *   - sends SIGTERM to G at `termAt` (see `sigtermLeadMs`) and SIGKILL to G at the deadline, unless a
 *     later deadline arrived first;
 *   - when the wrapper dies (the IPC channel closes) sends SIGTERM to G at once and SIGKILL after
 *     `graceMs`, never later than the deadline;
 *   - when the command exits, reports its status and SIGKILLs what the command left in G (itself
 *     included), so no child of the command outlives it unsupervised.
 * The wrapper, for its part, SIGKILLs G the moment the guard dies without having reported the
 * command's end, and enforces the same deadline itself once leadership has ended (a stopped guard).
 *
 * Not covered (docs/cli.md): wrapper and guard both stopped or dead at once, a whole machine frozen
 * or suspended (CLOCK_MONOTONIC stops with it), processes that leave group G (setsid, setpgid),
 * a guard whose timer is late by more than safetyMs.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { EXIT_CANNOT_EXECUTE, EXIT_LOST, EXIT_NOT_FOUND } from "./output.js";

// Plain CommonJS for `node -e`, so it needs no file on disk and no TypeScript loader.
// argv after "--": graceMs, file, ...args. The command starts only on the wrapper's "start" message,
// which carries the deadline as it is when the guard is ready (a guard slow to start under load must
// not judge the window by a deadline the wrapper has renewed since).
const GUARD_SOURCE = `
const { spawn } = require("node:child_process");
const [graceMs, file, ...args] = process.argv.slice(1);
const now = () => process.hrtime.bigint();
let termAt;
let killAt;
let started = false;
let ended = false;
let termSent = false;
let timer;
const send = (message, then) => {
  if (process.connected) process.send(message, then);
  else if (then) then();
};
// The group is this process's own: the command and its children, and the guard itself.
const group = (signal) => { try { process.kill(-process.pid, signal); } catch {} };
// Signals for the group reach the guard too; only the command acts on them.
for (const s of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(s, () => {});
const check = () => {
  clearTimeout(timer);
  if (ended) return;
  const t = now();
  if (t >= killAt) {
    ended = true;
    send({ type: "deadline", signal: "SIGKILL", at: String(t) });
    group("SIGKILL"); // the guard dies with its group
    return;
  }
  if (!termSent && t >= termAt) {
    termSent = true;
    send({ type: "deadline", signal: "SIGTERM", at: String(t) });
    group("SIGTERM");
  }
  // setTimeout may fire a little early (the loop's cached time): check() re-arms for the rest.
  timer = setTimeout(check, Math.ceil(Number((termSent ? killAt : termAt) - t) / 1e6));
};
const start = () => {
  started = true;
  if (now() >= termAt) {
    // The window is already closing (the wrapper stalled): do not start what would be stopped at once.
    ended = true;
    send({ type: "deadline", signal: "not-started" }, () => process.exit(0));
    return;
  }
  const child = spawn(file, args, { stdio: "inherit" });
  child.on("spawn", () => send({ type: "started", pid: child.pid }));
  child.on("error", (error) => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    send({ type: "error", code: error.code || "", message: error.message }, () => process.exit(0));
  });
  child.on("exit", (code, signal) => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    // Report, then SIGKILL whatever the command left in the group (and the guard with it).
    send({ type: "exit", code, signal }, () => group("SIGKILL"));
  });
  check();
};
process.on("message", (m) => {
  if (!m || (m.type !== "start" && m.type !== "deadline")) return;
  const nextKillAt = BigInt(m.killAt);
  if (killAt === undefined || nextKillAt > killAt) {
    killAt = nextKillAt;
    termAt = BigInt(m.termAt);
  }
  if (m.type === "start" && !started) start();
  else if (started) check();
});
process.on("disconnect", () => {
  if (!started) process.exit(0); // the wrapper is gone before the command ran
  if (ended) return;
  const cap = now() + BigInt(graceMs) * 1000000n;
  if (cap < killAt) killAt = cap;
  if (!termSent) {
    termSent = true;
    group("SIGTERM");
  }
  check();
});
send({ type: "ready" });
`;

export type JobOutcome =
  | { kind: "exited"; code: number }
  | { kind: "signalled"; signal: NodeJS.Signals }
  | { kind: "failed"; code: string; message: string }
  /** The safe window was closing (or leadership over) when the guard was ready; the command never ran. */
  | { kind: "too-late" }
  /** The guard died without reporting the command's end; the wrapper SIGKILLed the group. */
  | { kind: "guard-died"; signal: NodeJS.Signals | null; code: number | null };

/** 128 + the signal's number, as shells report a process killed by a signal. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/** The wrapper's exit status for a command's outcome: its code, 128 + signal number, 127/126, 75. */
export function exitCodeOf(outcome: JobOutcome): number {
  if (outcome.kind === "exited") return outcome.code;
  if (outcome.kind === "signalled") return signalExitCode(outcome.signal);
  if (outcome.kind === "failed") return outcome.code === "ENOENT" ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE;
  return EXIT_LOST;
}

export function describeOutcome(outcome: JobOutcome): string {
  switch (outcome.kind) {
    case "exited":
      return `exited with status ${outcome.code}`;
    case "signalled":
      return `was killed by ${outcome.signal}`;
    case "failed":
      return `could not be started: ${outcome.message}`;
    case "too-late":
      return "was not started: the lease's safe window was already closing";
    case "guard-died":
      return outcome.signal
        ? `lost its guard (killed by ${outcome.signal})`
        : `lost its guard (exited with status ${outcome.code})`;
  }
}

/**
 * How long before the deadline the guard sends SIGTERM when no newer deadline has come.
 *
 * A leader renewing on schedule sends its next renewal `renewMs` after the last one, and that
 * renewal moves the deadline (`leaseMs - safetyMs` after the last one) further out once its answer
 * is back. SIGTERM therefore waits until halfway between "the next renewal was due" and the
 * deadline: half of what is left is slack for a slow store round trip or a retry, half is the
 * command's time to exit before SIGKILL; never more than `graceMs`, the user's SIGTERM-to-SIGKILL
 * delay. With the defaults (lease 15 s): SIGTERM 4.25 s before the deadline, 9.25 s after the last
 * renewal was sent.
 */
export function sigtermLeadMs(o: { leaseMs: number; renewMs: number; safetyMs: number; graceMs: number }): number {
  return Math.max(0, Math.min(o.graceMs, (o.leaseMs - o.safetyMs - o.renewMs) / 2));
}

/**
 * A `performance.now()` instant (the elector's clock) as CLOCK_MONOTONIC nanoseconds, the clock
 * `process.hrtime.bigint()` reads in every process. On Linux and macOS both read the same monotonic
 * clock, so only the difference matters; hrtime is read first, so a pause between the two reads can
 * only make the result earlier, never later.
 */
export function monotonicNs(atMs: number): bigint {
  const hr = process.hrtime.bigint();
  const perf = performance.now();
  return hr + BigInt(Math.floor((atMs - perf) * 1e6));
}

export interface JobOptions {
  command: string[];
  env: Record<string, string | undefined>;
  /** `performance.now()` instant at which the lease's safe window closes (the elector's `leaderUntil`). */
  until: number;
  /** How long before a deadline the guard sends SIGTERM (`sigtermLeadMs`). */
  termLeadMs: number;
  /** After the wrapper dies, how long the guard waits between SIGTERM and SIGKILL (never past the deadline). */
  graceMs: number;
  /** Called once the command has started, with its pid. */
  onStarted?: (pid: number) => void;
  /** Called when the guard signalled the group because no newer deadline came in time, `agoMs` ago. */
  onDeadline?: (signal: "SIGTERM" | "SIGKILL", agoMs: number) => void;
}

/** What the guard sends: "ready", "started" {pid}, "exit" {code, signal}, "error" {code, message}, "deadline" {signal, at}. */
interface GuardMessage {
  type?: string;
  pid?: unknown;
  code?: unknown;
  signal?: unknown;
  message?: unknown;
  at?: unknown;
}

/** One run of the command. `exited` always resolves, whatever happens to the command or the guard. */
export class Job {
  readonly exited: Promise<JobOutcome>;
  /** The guard's pid, which is also the process group of the guard and the command. */
  readonly group: number | undefined;
  /** Set when the guard stopped the command because no renewal came in time. */
  stoppedAtDeadline: "SIGTERM" | "SIGKILL" | undefined;
  private done = false;
  private terminating = false;
  private reported: JobOutcome | undefined;
  private killSent = false;
  /** `performance.now()` instants: the latest deadline handed to the guard, and the kill a stop asked for. */
  private until: number;
  private killAt = Number.POSITIVE_INFINITY;
  /** Once leadership has ended the deadline cannot move: the wrapper enforces it too. */
  private leadershipOver = false;
  private killTimer: NodeJS.Timeout | undefined;
  private readonly termLeadMs: number;
  private readonly guard: ChildProcess;

  constructor(options: JobOptions) {
    const [file, ...args] = options.command;
    if (file === undefined) throw new Error("no command given");
    this.until = options.until;
    this.termLeadMs = options.termLeadMs;
    this.guard = spawn(
      process.execPath,
      ["-e", GUARD_SOURCE, "--", String(Math.round(options.graceMs)), file, ...args],
      {
        stdio: ["inherit", "inherit", "inherit", "ipc"],
        env: options.env,
        detached: true,
      },
    );
    this.group = this.guard.pid;
    this.exited = new Promise<JobOutcome>((resolve) => {
      this.guard.on("message", (m: GuardMessage) => this.onGuardMessage(m, options));
      const settle = (outcome: JobOutcome) => {
        if (this.done) return;
        this.done = true;
        clearTimeout(this.killTimer);
        resolve(outcome);
      };
      this.guard.on("error", (error: NodeJS.ErrnoException) =>
        settle({ kind: "failed", code: error.code ?? "", message: error.message }),
      );
      // The guard is gone. Unless it reported the command's end, the command may still be running,
      // unsupervised: kill its group now, before anything else.
      this.guard.on("exit", () => {
        if (!this.reported) this.signalGroup("SIGKILL");
        // Too late to start: this side closed the channel itself, after which "close" never comes.
        else if (this.reported.kind === "too-late") settle(this.reported);
      });
      // "close" comes after the IPC channel has closed, so every message the guard sent has been read.
      this.guard.on("close", (code, signal) => {
        if (this.reported) return settle(this.reported);
        if (this.killSent || this.stoppedAtDeadline === "SIGKILL")
          return settle({ kind: "signalled", signal: "SIGKILL" });
        settle({ kind: "guard-died", signal, code });
      });
    });
  }

  get running(): boolean {
    return !this.done;
  }

  private onGuardMessage(m: GuardMessage, options: JobOptions): void {
    if (m.type === "ready") {
      if (this.leadershipOver) {
        // Leadership ended while the guard was starting: the command must not start at all.
        this.reported = { kind: "too-late" };
        this.guard.disconnect();
      } else {
        // The deadline as it stands now, converted now: the guard judges the window by it.
        this.guard.send({ type: "start", ...this.deadline(this.until) }, () => undefined);
      }
    } else if (m.type === "started" && typeof m.pid === "number") {
      options.onStarted?.(m.pid);
    } else if (m.type === "exit") {
      this.reported =
        typeof m.signal === "string"
          ? { kind: "signalled", signal: m.signal as NodeJS.Signals }
          : { kind: "exited", code: typeof m.code === "number" ? m.code : 1 };
    } else if (m.type === "error") {
      this.reported = { kind: "failed", code: String(m.code), message: String(m.message) };
    } else if (m.type === "deadline" && m.signal === "not-started") {
      this.reported = { kind: "too-late" };
    } else if (m.type === "deadline" && (m.signal === "SIGTERM" || m.signal === "SIGKILL")) {
      this.stoppedAtDeadline = m.signal;
      const at = typeof m.at === "string" && /^\d+$/.test(m.at) ? BigInt(m.at) : process.hrtime.bigint();
      options.onDeadline?.(m.signal, Number(process.hrtime.bigint() - at) / 1e6);
    }
  }

  /** A renewal moved the end of the safe window (`performance.now()` instant) to `until`. */
  extend(until: number | undefined): void {
    if (until === undefined || this.done || this.leadershipOver || until <= this.until) return;
    this.until = until;
    // Before the guard is ready its "start" carries the latest deadline; a deadline sent early is harmless.
    if (this.guard.connected) this.guard.send({ type: "deadline", ...this.deadline(until) }, () => undefined);
    this.armKill();
  }

  /**
   * Leadership has ended: no renewal will move the deadline again. The wrapper SIGKILLs the group at
   * the last deadline itself, in case the guard cannot (stopped).
   */
  leadershipEnded(): void {
    this.leadershipOver = true;
    this.armKill();
  }

  /** Sends `signal` to the command's process group (the guard ignores all but SIGKILL). */
  signal(signal: NodeJS.Signals): void {
    if (this.done) return;
    if (signal === "SIGKILL") this.killSent = true;
    this.signalGroup(signal);
  }

  /** SIGKILL after `graceMs` unless the command has exited by then (or a deadline comes first). */
  killAfter(graceMs: number): void {
    this.killAt = Math.min(this.killAt, performance.now() + graceMs);
    this.armKill();
  }

  /** SIGTERM now, SIGKILL after `graceMs`. Idempotent. */
  terminate(graceMs: number): void {
    if (this.done || this.terminating) return;
    this.terminating = true;
    this.signal("SIGTERM");
    this.killAfter(graceMs);
  }

  private armKill(): void {
    if (this.done) return;
    clearTimeout(this.killTimer);
    const at = Math.min(this.killAt, this.leadershipOver ? this.until : Number.POSITIVE_INFINITY);
    if (!Number.isFinite(at)) return;
    const inMs = at - performance.now();
    if (inMs <= 0) this.signal("SIGKILL");
    else this.killTimer = setTimeout(() => this.signal("SIGKILL"), inMs);
  }

  private signalGroup(signal: NodeJS.Signals): void {
    // Never signal "-0" or "-1" (the wrapper's own group, every process): only a real guard's group.
    if (this.group === undefined || this.group <= 1) return;
    try {
      process.kill(-this.group, signal);
    } catch {
      // ESRCH: the group is already gone.
    }
  }

  private deadline(until: number): { termAt: string; killAt: string } {
    const killAt = monotonicNs(until);
    return { killAt: String(killAt), termAt: String(killAt - BigInt(Math.round(this.termLeadMs * 1e6))) };
  }
}
