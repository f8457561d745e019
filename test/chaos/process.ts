/**
 * Process faults on the manual clock. Every candidate runs as a `SimProcess`: its own view of
 * time (`ProcessClock`) and a gate through which everything that would wake its code passes
 * (timers, store responses, pushed changes).
 *
 * - Paused (a long GC pause, SIGSTOP): nothing is delivered, so its timers do not fire and its
 *   calls do not proceed. Monotonic time keeps running, as it does for a real paused process:
 *   on resume every overdue wake-up is delivered in the order it became due, late. Requests it
 *   sent before the pause are not paused: the network and the store carry on, so an in-flight
 *   write can land while its sender is frozen.
 * - Crashed: paused forever, without a release. What it already sent still lands.
 * - Skewed: `wallNow()` is offset from true time by a fixed amount (bounded by maxSkewMs).
 * - Drifting: `now()` runs at `1 + driftRate` times true time from its own origin (a machine's
 *   oscillator, and its boot time), and its timers fire when *its* clock reaches their deadline:
 *   a slow clock's timers fire late in true time, a fast clock's early. The wall clock does not
 *   drift (NTP keeps it within its offset); only the monotonic clock the elector decides with does.
 */
import type { Clock, ManualClock } from "../../src/clock.js";

interface Wakeup {
  at: number;
  deliver: () => void;
}

export type ProcessState = "running" | "paused" | "crashed";

/** How a process's monotonic clock departs from true time. */
export interface MonotonicFaults {
  /** The clock runs at `1 + driftRate` times true time (driftRate > -1). Default 0. */
  driftRate?: number;
  /** The clock reads this at true time 0 (monotonic origins differ between machines). Default 0. */
  originMs?: number;
}

export class SimProcess {
  private state: ProcessState = "running";
  private readonly queue: Wakeup[] = [];
  readonly clock: ProcessClock;

  constructor(
    readonly label: string,
    private readonly trueClock: ManualClock,
    wallOffsetMs: number,
    /** Lets the code woken by one delivery run to quiescence before the next (the clock's idle hook). */
    private readonly settle: () => Promise<void>,
    monotonic: MonotonicFaults = {},
  ) {
    this.clock = new ProcessClock(trueClock, this, wallOffsetMs, monotonic);
  }

  get current(): ProcessState {
    return this.state;
  }

  /**
   * Runs `wake` now if the process is running, later (in arrival order) if paused, never if
   * crashed. Deliveries queue behind older ones still being replayed after a pause.
   */
  deliver(wake: () => void): void {
    if (this.state === "crashed") return;
    if (this.state === "paused" || this.queue.length > 0) {
      this.queue.push({ at: this.trueClock.now(), deliver: wake });
      return;
    }
    wake();
  }

  pause(): void {
    if (this.state === "running") this.state = "paused";
  }

  crash(): void {
    this.state = "crashed";
    this.queue.length = 0;
  }

  /** Ends a pause: delivers every wake-up that came due meanwhile, oldest first, settling after each. */
  async resume(): Promise<void> {
    if (this.state !== "paused") return;
    this.state = "running";
    for (let next = this.queue[0]; next && this.state === "running"; next = this.queue[0]) {
      next.deliver();
      this.queue.shift();
      await this.settle();
    }
  }

  /** How many wake-ups are waiting for a resume. */
  get backlog(): number {
    return this.queue.length;
  }
}

/**
 * One process's clock: a drifting monotonic clock, an offset wall clock, and timers that pass the
 * gate. A timer's deadline is on this clock; it is scheduled on the true clock at the instant this
 * clock reaches it.
 */
export class ProcessClock implements Clock {
  readonly rate: number;
  readonly originMs: number;
  /** Deadlines of fired timers: `now()` never reads below one (no float rounding makes a timer early). */
  private floor = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly trueClock: ManualClock,
    private readonly process: SimProcess,
    readonly wallOffsetMs: number,
    monotonic: MonotonicFaults = {},
  ) {
    this.rate = 1 + (monotonic.driftRate ?? 0);
    this.originMs = monotonic.originMs ?? 0;
    if (!(this.rate > 0)) throw new Error(`drift rate ${monotonic.driftRate} stops or reverses the clock`);
  }

  now(): number {
    return Math.max(this.floor, this.fromTrue(this.trueClock.now()));
  }

  wallNow(): number {
    return this.trueClock.wallNow() + this.wallOffsetMs;
  }

  /** This clock's reading at true time `t`. */
  fromTrue(t: number): number {
    return this.originMs + t * this.rate;
  }

  /** The true time at which this clock reads `local` (for judging its beliefs on true time). */
  toTrue(local: number): number {
    return (local - this.originMs) / this.rate;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const deadline = this.now() + Math.max(0, ms);
      // An abort comes from the process's own (running) code, or from a stop at the end of a run.
      void this.trueClock.sleep(this.toTrue(deadline) - this.trueClock.now(), signal).then(() => {
        if (!signal?.aborted) this.floor = Math.max(this.floor, deadline);
        this.process.deliver(resolve);
      });
    });
  }
}
