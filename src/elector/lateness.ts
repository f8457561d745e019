/**
 * How late this process's event loop runs, the one sampler for the whole package: the load lane
 * (src/elector/load-lane.ts) and the API's admission (src/api/admission.ts, through the Node entry)
 * both read it. It lives here, not in src/api, because the API already imports the elector and the
 * elector must not import the API.
 *
 * Measured without any runtime's own API: a timer asks to wake every `sampleMs` and records how
 * much later than asked it woke. A loop blocked by synchronous work, a process starved of CPU and
 * a long GC pause all show up as that drift, the way Node's `monitorEventLoopDelay` shows them, but
 * with only timers and a clock, so it reads the same on every runtime (and on a ManualClock).
 *
 * Two read-outs, because the two users ask different questions:
 * - `latenessMs`, the p99 of the samples of the last `windowMs` (with fewer than 100 samples, their
 *   maximum: one stall marks the whole window). The lane holds followers back on it: a steady
 *   reading, not one blip.
 * - `now()`, the larger of the last sample and how overdue the next one is at the moment of asking.
 *   Admission refuses on it: requests that queued behind a block are judged late even if they run
 *   before the timer does, when the last sample still says the loop was on time.
 *
 * Two lifecycles, because the two users live differently: the server samples from `start()` to
 * `stop()`, its whole life; the lane samples from the first `touch()` until `idleMs` after the
 * last, so a process with no follower asking (or none left) samples nothing. On the system clock
 * the timer is unref'd where the runtime has `unref` (Node, Bun), so sampling never keeps a process
 * alive. Runtime-neutral.
 */
import { type Clock, systemClock } from "../clock.js";

export interface LatenessOptions {
  clock?: Clock;
  /** Interval between samples. Default 100. */
  sampleMs?: number;
  /** Samples older than this are forgotten. Default 3000. */
  windowMs?: number;
  /** Sampling started by `touch()` stops this long after the last one. Default 30000. */
  idleMs?: number;
}

interface Sample {
  at: number;
  lateMs: number;
}

/** A sleep whose timer does not hold the process open (where the runtime can say so). */
function unrefSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    // Node and Bun return a handle with unref(); browsers, Deno and workerd return a number.
    (timer as unknown as { unref?: () => void }).unref?.();
    signal?.addEventListener("abort", done, { once: true });
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
  private lastMs = 0;
  /** When the pending sample is due; undefined while not sampling. */
  private dueAt: number | undefined;
  private touchedAt = Number.NEGATIVE_INFINITY;
  /** Started by `start()`: sample until `stop()`, whatever the touches. */
  private held = false;
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

  /** Sample until `stop()` (a server, for its whole life). */
  start(): this {
    this.held = true;
    this.run();
    return this;
  }

  /** Someone cares about the loop: sample (again) for at least `idleMs` from now. */
  touch(): void {
    this.touchedAt = this.clock.now();
    this.run();
  }

  /** The p99 of the lateness sampled within the window, ms; 0 while not sampling. */
  get latenessMs(): number {
    return this.p99Ms;
  }

  /** How late the loop is at this moment, ms: the last sample, or more if the next is overdue; 0 while not sampling. */
  now(): number {
    if (this.dueAt === undefined) return 0;
    return Math.max(this.lastMs, this.clock.now() - this.dueAt);
  }

  get sampling(): boolean {
    return this.running !== undefined;
  }

  stop(): void {
    this.running?.abort();
    this.running = undefined;
    this.held = false;
    this.dueAt = undefined;
    // Stale samples would mark a later, healthy loop as late: a restart starts from nothing.
    this.samples = [];
    this.p99Ms = 0;
    this.lastMs = 0;
  }

  private run(): void {
    if (this.running) return;
    const running = new AbortController();
    this.running = running;
    void this.loop(running.signal);
  }

  private async loop(signal: AbortSignal): Promise<void> {
    let askedAt = this.clock.now();
    while (!signal.aborted) {
      this.dueAt = askedAt + this.sampleMs;
      await this.sleep(this.sampleMs, signal);
      if (signal.aborted) return;
      const now = this.clock.now();
      this.record(now, Math.max(0, now - askedAt - this.sampleMs));
      askedAt = now;
      if (!this.held && now - this.touchedAt > this.idleMs) return this.stop();
      this.onSample?.();
    }
  }

  private record(at: number, lateMs: number): void {
    this.lastMs = lateMs;
    const from = at - this.windowMs;
    let drop = 0;
    while (drop < this.samples.length && (this.samples[drop]?.at ?? at) < from) drop++;
    if (drop > 0) this.samples.splice(0, drop);
    this.samples.push({ at, lateMs });
    const sorted = this.samples.map((s) => s.lateMs).sort((a, b) => a - b);
    this.p99Ms = sorted[Math.ceil(sorted.length * 0.99) - 1] ?? 0;
  }
}

/**
 * The sampler as `leasehold/api` has offered it since admission came (`new LatenessProbe(intervalMs,
 * clock)`, `start`, `stop`, `now`): pass its `now` as createApp's `admission.lateness`. Kept as a
 * facade over the one sampler so library callers keep their code; a 50 ms timer, unref'd.
 */
export class LatenessProbe {
  private readonly sampler: LatenessSampler;

  constructor(intervalMs = 50, clock: () => number = () => performance.now()) {
    // Only `now` was ever injectable here; the timer stays a real, unref'd one.
    const timed: Clock = { now: clock, wallNow: () => Date.now(), sleep: unrefSleep };
    this.sampler = new LatenessSampler({ clock: timed, sampleMs: intervalMs });
  }

  start(): this {
    this.sampler.start();
    return this;
  }

  stop(): void {
    this.sampler.stop();
  }

  /** How late the event loop is now, in ms (0 while stopped). */
  now(): number {
    return this.sampler.now();
  }
}
