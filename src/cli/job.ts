/**
 * The leader's command, run under a small guard process so it never outlives the wrapper.
 *
 * Why a guard: if `leasehold run` is killed with SIGKILL (OOM killer, `kill -9`, a crashed
 * container runtime) it cannot stop its command, and an orphaned command would keep working while
 * another candidate takes the lease over. The guard is a tiny Node process (source below, run
 * with `node -e`, so it needs no file on disk and no TypeScript loader) that:
 *   - starts the command in its own process group (`detached`), so signals reach the command only
 *     when the wrapper sends them (a terminal's Ctrl-C is not delivered twice) and a stop reaches
 *     the command's own children too;
 *   - relays the wrapper's kill requests to that group over the IPC channel;
 *   - notices the wrapper's death when the IPC channel closes, sends SIGTERM to the group at once
 *     and SIGKILL after `orphanKillMs` (chosen below the time any other candidate needs to take the
 *     lease over);
 *   - reports the command's exit (code or signal) back, then exits.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND } from "./output.js";

// Plain CommonJS for `node -e`; argv after "--": orphanKillMs, file, ...args.
const GUARD_SOURCE = `
const { spawn } = require("node:child_process");
const [killMs, file, ...args] = process.argv.slice(1);
let finished = false;
const send = (message, then) => {
  if (process.connected) process.send(message, then);
  else if (then) then();
};
for (const s of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(s, () => {});
const child = spawn(file, args, { stdio: "inherit", detached: true });
const group = (signal) => {
  if (finished) return;
  try { process.kill(-child.pid, signal); } catch { try { child.kill(signal); } catch {} }
};
child.on("spawn", () => send({ type: "started", pid: child.pid }));
child.on("error", (error) => {
  if (finished) return;
  finished = true;
  send({ type: "error", code: error.code || "", message: error.message }, () => process.exit(0));
});
child.on("exit", (code, signal) => {
  finished = true;
  send({ type: "exit", code, signal }, () => process.exit(0));
});
process.on("message", (m) => { if (m && m.type === "kill") group(m.signal); });
process.on("disconnect", () => {
  group("SIGTERM");
  setTimeout(() => group("SIGKILL"), Number(killMs));
});
`;

export type JobOutcome =
  | { kind: "exited"; code: number }
  | { kind: "signalled"; signal: NodeJS.Signals }
  | { kind: "failed"; code: string; message: string };

/** 128 + the signal's number, as shells report a process killed by a signal. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/** The wrapper's exit status for a command's outcome: its code, 128 + signal number, 127/126. */
export function exitCodeOf(outcome: JobOutcome): number {
  if (outcome.kind === "exited") return outcome.code;
  if (outcome.kind === "signalled") return signalExitCode(outcome.signal);
  return outcome.code === "ENOENT" ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE;
}

export function describeOutcome(outcome: JobOutcome): string {
  if (outcome.kind === "exited") return `exited with status ${outcome.code}`;
  if (outcome.kind === "signalled") return `was killed by ${outcome.signal}`;
  return `could not be started: ${outcome.message}`;
}

export interface JobOptions {
  command: string[];
  env: Record<string, string | undefined>;
  /** After the wrapper dies, how long the guard waits between SIGTERM and SIGKILL. */
  orphanKillMs: number;
}

/** One run of the command. `exited` always resolves, whatever happens to the command or the guard. */
export class Job {
  readonly exited: Promise<JobOutcome>;
  private done = false;
  private terminating = false;
  private killTimer: NodeJS.Timeout | undefined;
  private readonly guard: ChildProcess;

  constructor(options: JobOptions) {
    const [file, ...args] = options.command;
    if (file === undefined) throw new Error("no command given");
    this.guard = spawn(process.execPath, ["-e", GUARD_SOURCE, "--", String(options.orphanKillMs), file, ...args], {
      stdio: ["inherit", "inherit", "inherit", "ipc"],
      env: options.env,
    });
    this.exited = new Promise<JobOutcome>((resolve) => {
      let reported: JobOutcome | undefined;
      this.guard.on("message", (m: { type?: string; code?: unknown; signal?: unknown; message?: unknown }) => {
        if (m.type === "exit") {
          reported =
            typeof m.signal === "string"
              ? { kind: "signalled", signal: m.signal as NodeJS.Signals }
              : { kind: "exited", code: typeof m.code === "number" ? m.code : 1 };
        } else if (m.type === "error") {
          reported = { kind: "failed", code: String(m.code), message: String(m.message) };
        }
      });
      const settle = (outcome: JobOutcome) => {
        if (this.done) return;
        this.done = true;
        clearTimeout(this.killTimer);
        resolve(outcome);
      };
      this.guard.on("error", (error: NodeJS.ErrnoException) =>
        settle({ kind: "failed", code: error.code ?? "", message: error.message }),
      );
      // The guard exits right after reporting; if it died first, its own status is all we know.
      this.guard.on("exit", (code, signal) =>
        settle(reported ?? (signal ? { kind: "signalled", signal } : { kind: "exited", code: code ?? 1 })),
      );
    });
  }

  get running(): boolean {
    return !this.done;
  }

  /** Sends `signal` to the command's process group. */
  signal(signal: NodeJS.Signals): void {
    if (this.done || !this.guard.connected) return;
    this.guard.send({ type: "kill", signal }, () => undefined);
  }

  /** SIGKILL after `graceMs` unless the command has exited by then. Idempotent. */
  killAfter(graceMs: number): void {
    if (this.done || this.killTimer) return;
    this.killTimer = setTimeout(() => this.signal("SIGKILL"), graceMs);
  }

  /** SIGTERM now, SIGKILL after `graceMs`. Idempotent. */
  terminate(graceMs: number): void {
    if (this.done || this.terminating) return;
    this.terminating = true;
    this.signal("SIGTERM");
    this.killAfter(graceMs);
  }
}
