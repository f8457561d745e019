/**
 * How late this process's event loop runs, measured without any runtime's own API: a timer asks
 * to wake every `sampleMs` and records how much later than asked it woke. A loop blocked by
 * synchronous work, a process starved of CPU and a long GC pause all show up as that drift, and
 * they are exactly what makes a renewal late. The loop's state is the p99 of the samples of the
 * last `windowMs` (with fewer than 100 samples, their maximum: one stall marks the whole window).
 *
 * Cheap and never in the way: one timer every `sampleMs`, started by the first `touch()` and
 * stopped `idleMs` after the last, so a process with no follower asking (or none left) samples
 * nothing. On the system clock the timer is unref'd where the runtime has `unref` (Node, Bun),
 * so sampling never keeps a process alive. Runtime-neutral.
 */
import { type Clock, systemClock } from "../clock.js";

export interface LatenessOptions {
  clock?: Clock;
  /** Interval between samples. Default 100. */
  sampleMs?: number;
  /** Samples older than this are forgotten. Default 3000. */
  windowMs?: number;
  /** Sampling stops this long after the last `touch()`. Default 30000. */
  idleMs?: number;
}

interface Sample {
  at: number;
  lateMs: number;
}

/** A sleep whose timer does not hold the process open (where the runtime can say so). */
function unrefSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    // Node and Bun return a handle with unref(); browsers, Deno and workerd return a number.
    (timer as unknown as { unref?: () => void }).unref?.();
    signal.addEventListener("abort", done, { once: true });
  });
}

export class LatenessSampler {
  readonly sampleMs: number;
  readonly windowMs: number;
  readonly idleMs: number;
  private readonly clock: Clock;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  private samples: Sample[] = [];
  private p99Ms = 0;
  private touchedAt = Number.NEGATIVE_INFINITY;
  private running: AbortController | undefined;
  /** Called after each sample (the lane re-examines what waits). */
  onSample: (() => void) | undefined;

  constructor(options: LatenessOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.sampleMs = options.sampleMs ?? 100;
    this.windowMs = options.windowMs ?? 3000;
    this.idleMs = options.idleMs ?? 30_000;
    const clock = this.clock;
    this.sleep = clock === systemClock ? unrefSleep : (ms, signal) => clock.sleep(ms, signal);
  }

  /** Someone cares about the loop: sample (again) for at least `idleMs` from now. */
  touch(): void {
    this.touchedAt = this.clock.now();
    if (this.running) return;
    const running = new AbortController();
    this.running = running;
    void this.run(running.signal);
  }

  /** The p99 of the lateness sampled within the window, ms; 0 while not sampling. */
  get latenessMs(): number {
    return this.p99Ms;
  }

  get sampling(): boolean {
    return this.running !== undefined;
  }

  stop(): void {
    this.running?.abort();
    this.running = undefined;
    // Stale samples would mark a later, healthy loop as late: a restart starts from nothing.
    this.samples = [];
    this.p99Ms = 0;
  }

  private async run(signal: AbortSignal): Promise<void> {
    let askedAt = this.clock.now();
    while (!signal.aborted) {
      await this.sleep(this.sampleMs, signal);
      if (signal.aborted) return;
      const now = this.clock.now();
      this.record(now, Math.max(0, now - askedAt - this.sampleMs));
      askedAt = now;
      if (now - this.touchedAt > this.idleMs) return this.stop();
      this.onSample?.();
    }
  }

  private record(at: number, lateMs: number): void {
    const from = at - this.windowMs;
    let drop = 0;
    while (drop < this.samples.length && (this.samples[drop]?.at ?? at) < from) drop++;
    if (drop > 0) this.samples.splice(0, drop);
    this.samples.push({ at, lateMs });
    const sorted = this.samples.map((s) => s.lateMs).sort((a, b) => a - b);
    this.p99Ms = sorted[Math.ceil(sorted.length * 0.99) - 1] ?? 0;
  }
}
