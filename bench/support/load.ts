/**
 * Load for the overload benchmark, and what it does to a process: CPU hogs as real processes (one
 * busy loop per core, at normal priority, as a noisy neighbour would be), a process's CPU time
 * from /proc, and this process's event-loop delay (perf_hooks.monitorEventLoopDelay).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";

export interface Hogs {
  count: number;
  stop(): Promise<void>;
}

/** One busy-looping process per core (or `count`); `stop()` kills them and waits for their exit. */
export function startCpuHogs(count = cpus().length): Hogs {
  const children: ChildProcess[] = Array.from({ length: count }, () =>
    spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }),
  );
  return {
    count,
    stop: async () => {
      await Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              child.once("exit", () => resolve());
              child.kill("SIGKILL");
            }),
        ),
      );
    },
  };
}

/** utime + stime of a process, in ms, from /proc (Linux); NaN elsewhere. */
export function processCpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    // After "pid (comm) ", utime and stime are fields 12 and 13 (0-based), in clock ticks (100 Hz).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

export interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

/** This process's event-loop delay since the last `take()`, in ms (10 ms sampling resolution). */
export function eventLoopDelay(): { take(): LoopDelay; stop(): void } {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  return {
    take: () => {
      // No sample at all (the loop never got to run the sampling timer): say so, not 0.
      if (histogram.count === 0) return { p50: Number.NaN, p99: Number.NaN, max: Number.NaN };
      const out = {
        p50: histogram.percentile(50) / 1e6,
        p99: histogram.percentile(99) / 1e6,
        max: histogram.max / 1e6,
      };
      histogram.reset();
      return out;
    },
    stop: () => histogram.disable(),
  };
}
