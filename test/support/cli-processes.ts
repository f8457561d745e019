/**
 * Runs the real `leasehold` binary (node bin/leasehold.js) as child processes for the CLI tests,
 * remembers every child so `killAll` (afterEach) leaves nothing behind, and reads the log the
 * test command (cli-job.ts) writes. `killMentioning` finds and kills every process whose command
 * line names a test's own directory, wherever it ended up (guards and commands live in process
 * groups of their own and outlive a SIGKILLed wrapper by design).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export const repo = join(import.meta.dirname, "..", "..");
const bin = join(repo, "bin", "leasehold.js");
const job = join(repo, "test", "support", "cli-job.ts");

/** The command line `leasehold run` is given in the tests: the logging job under tsx. */
export function jobCommand(log: string, ...mode: string[]): string[] {
  return [process.execPath, "--import", "tsx", job, log, ...mode];
}

export interface Cli {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export class CliProcesses {
  private readonly running = new Set<Cli>();

  constructor(private readonly env: Record<string, string> = {}) {}

  /** `detached`: the wrapper leads a process group of its own (pgid = its pid), so a test may SIGKILL that group. */
  start(args: string[], env: Record<string, string> = {}, options: { detached?: boolean } = {}): Cli {
    const { LEASEHOLD_STORE: _ignored, ...inherited } = process.env;
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: repo,
      env: { ...inherited, ...this.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: options.detached ?? false,
    });
    let out = "";
    let err = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr?.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const cli: Cli = {
      child,
      stdout: () => out,
      stderr: () => err,
      exited: new Promise((resolve) => {
        child.on("close", (code, signal) => {
          this.running.delete(cli);
          resolve({ code, signal });
        });
      }),
    };
    this.running.add(cli);
    return cli;
  }

  /** Runs one command to completion. */
  async run(
    args: string[],
    env: Record<string, string> = {},
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const cli = this.start(args, env);
    const { code } = await cli.exited;
    return { code, stdout: cli.stdout(), stderr: cli.stderr() };
  }

  /** SIGKILL to every wrapper still running; their guards then stop the commands. */
  async killAll(): Promise<void> {
    const left = [...this.running];
    for (const cli of left) cli.child.kill("SIGKILL");
    await Promise.all(left.map((c) => c.exited));
  }
}

/** `/proc/<pid>/stat` state and command line, or undefined when there is no such process (Linux). */
function procInfo(pid: number): { state: string; cmdline: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
    return { state, cmdline };
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` is a live (not zombie) process whose command line contains `marker`. A zombie has
 * stopped running but keeps answering `kill(pid, 0)` until reaped, and in some containers pid 1
 * never reaps; the marker guards against a recycled pid.
 */
export function alive(pid: number, marker: string): boolean {
  if (!existsSync("/proc/self/stat")) {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  const info = procInfo(pid);
  return info !== undefined && info.state !== "Z" && info.state !== "X" && info.cmdline.includes(marker);
}

/** Live processes whose command line contains `marker` (Linux; [] elsewhere). */
export function processesMentioning(marker: string): number[] {
  if (!existsSync("/proc/self/stat")) return [];
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)
    .map(Number)
    .filter((pid) => alive(pid, marker));
}

/** SIGKILLs every live process whose command line contains `marker` until none is left. */
export async function killMentioning(marker: string): Promise<void> {
  for (let round = 0; round < 50; round++) {
    const left = processesMentioning(marker);
    if (left.length === 0) return;
    for (const pid of left) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`processes mentioning ${marker} survived SIGKILL: ${processesMentioning(marker).join(", ")}`);
}

/** Polls `check` until it returns a value other than undefined/false; fails after `timeoutMs` naming `what`. */
export async function until<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface LogLine {
  identity: string;
  term: number;
  event: string;
  at: number;
  lease: string;
}

export function readLog(path: string): LogLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => {
      const [identity, term, event, at, lease] = l.split(" ");
      return { identity: identity!, term: Number(term), event: event!, at: Number(at), lease: lease! };
    });
}
