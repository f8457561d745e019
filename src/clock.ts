/**
 * Time, injected. Decisions use `now()` (monotonic, this process only); `wallNow()` is only
 * stamped into records for humans and for the stateless API. Runtime-neutral.
 */

export interface Clock {
  /** Monotonic milliseconds; only differences are meaningful, never comparable across machines. */
  now(): number;
  /** Wall-clock milliseconds since the epoch. */
  wallNow(): number;
  /** Resolves after `ms` (or at once when `signal` aborts; check `signal.aborted` after). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function realSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    // Infinity and huge delays overflow setTimeout's 32-bit limit and fire at once.
    const timer = Number.isFinite(ms) ? setTimeout(done, Math.min(Math.max(0, ms), 2 ** 31 - 1)) : undefined;
    signal?.addEventListener("abort", done, { once: true });
  });
}

export const systemClock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  sleep: realSleep,
};

interface Timer {
  at: number;
  seq: number;
  resolve: () => void;
}

export interface ManualClockOptions {
  /** Wall clock at monotonic 0. */
  wallStart?: number;
  /** Wall clock runs this much ahead of true time (negative: behind), to model skew. */
  wallOffsetMs?: number;
  /**
   * Awaited after each timer fires, before the next: lets the code under test (and any real I/O it
   * started) settle. The default yields to the macrotask queue a few times.
   */
  idle?: () => Promise<void>;
}

function macrotask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** A clock that moves only when a test calls `advance`: deterministic, never sleeps for real. */
export class ManualClock implements Clock {
  private monotonic = 0;
  private seq = 0;
  private timers: Timer[] = [];
  private readonly wallStart: number;
  wallOffsetMs: number;
  idle: () => Promise<void>;

  constructor(options: ManualClockOptions = {}) {
    this.wallStart = options.wallStart ?? Date.UTC(2026, 0, 1);
    this.wallOffsetMs = options.wallOffsetMs ?? 0;
    this.idle =
      options.idle ??
      (async () => {
        for (let i = 0; i < 3; i++) await macrotask();
      });
  }

  now(): number {
    return this.monotonic;
  }

  wallNow(): number {
    return Math.round(this.wallStart + this.monotonic + this.wallOffsetMs);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer: Timer = { at: this.monotonic + Math.max(0, ms), seq: this.seq++, resolve };
      const cancel = () => {
        this.timers = this.timers.filter((t) => t !== timer);
        resolve();
      };
      timer.resolve = () => {
        signal?.removeEventListener("abort", cancel);
        resolve();
      };
      signal?.addEventListener("abort", cancel, { once: true });
      if (Number.isFinite(timer.at)) this.timers.push(timer);
    });
  }

  /** Number of sleeps waiting: a test can tell "nothing scheduled" from "waiting". */
  get pending(): number {
    return this.timers.length;
  }

  /** Time of the next timer, or `undefined`. */
  get nextAt(): number | undefined {
    return this.earliest()?.at;
  }

  /** Moves time forward by `ms`, firing every timer due on the way in order, settling after each. */
  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.monotonic + ms);
  }

  /**
   * Moves time forward by `ms` without firing any timer, as a process paused by SIGSTOP, a long GC
   * or a VM migration wakes to a later clock before its timers get to run.
   */
  jump(ms: number): void {
    this.monotonic += Math.max(0, ms);
  }

  async advanceTo(target: number): Promise<void> {
    await this.idle();
    for (;;) {
      const next = this.earliest();
      if (!next || next.at > target) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.monotonic = Math.max(this.monotonic, next.at);
      next.resolve();
      await this.idle();
    }
    this.monotonic = Math.max(this.monotonic, target);
    await this.idle();
  }

  private earliest(): Timer | undefined {
    let best: Timer | undefined;
    for (const t of this.timers) if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    return best;
  }
}
