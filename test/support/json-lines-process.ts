/**
 * A test's child process that prints one JSON object per line (its events, stamped on
 * CLOCK_MONOTONIC): the lines parsed as they come, a wait for the n-th line that matches, and
 * every child started this way killed after each test (`killAfterEach`).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach } from "vitest";

export interface JsonLinesProcess<L> {
  child: ChildProcess;
  lines: L[];
  /** Resolves with the `count`-th line that satisfies `test` (rejects if the process exits first). */
  until(test: (line: L) => boolean, count?: number): Promise<L>;
  exited: Promise<number | null>;
}

const running = new Set<ChildProcess>();

/** SIGKILLs, after each test of the calling file, every child it started and left running. */
export function killAfterEach(): void {
  afterEach(() => {
    for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    running.clear();
  });
}

/** `node --import tsx <script> ...args`, stdin a pipe, stderr inherited. */
export function startJsonLines<L>(name: string, script: string, args: string[]): JsonLinesProcess<L> {
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  running.add(child);
  const lines: L[] = [];
  const waiters: Array<() => void> = [];
  let buffered = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      lines.push(JSON.parse(buffered.slice(0, end)) as L);
      buffered = buffered.slice(end + 1);
    }
    for (const w of waiters.splice(0)) w();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const until = (test: (line: L) => boolean, count = 1) =>
    new Promise<L>((resolve, reject) => {
      const check = () => {
        const matching = lines.filter(test);
        if (matching.length >= count) return resolve(matching[count - 1] as L);
        waiters.push(check);
      };
      check();
      void exited.then((code) => reject(new Error(`${name} exited (${code}) while waiting`)));
    });
  return { child, lines, until, exited };
}
