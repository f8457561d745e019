/**
 * Runs the real `leasehold` binary (node bin/leasehold.js) as child processes for the CLI tests,
 * remembers every child so `killAll` (afterEach) leaves nothing behind, and reads the log the
 * test command (cli-job.ts) writes.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
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

  start(args: string[], env: Record<string, string> = {}): Cli {
    const { LEASEHOLD_STORE: _ignored, ...inherited } = process.env;
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: repo,
      env: { ...inherited, ...this.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
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
