/**
 * `schedule({ store, name, cron, fn, ... })`: a cron line that runs on one replica per fire
 * (docs/schedule.md). Every replica runs the same call; each wakes at the line's fires by its own
 * wall clock and looks at the job's record once (./fire-job.ts), and exactly one claims each fire.
 *
 * The loop, one look at a time:
 *   start     one look: a fire left unfinished by a crashed runner, or fires late or missed while
 *             no replica was up, are settled or run (./fire-plan.ts) before the first wake.
 *   fire      at each fire of the line (a replica woken late takes the latest fire due): one look.
 *   run ends  the finish write, then one more look at once: a fire that came due before the run
 *             began and is still within `maxLateMs` runs next (catching up in order).
 *   recheck   a record held by another replica is looked at again the moment it would expire by
 *             observed time, so a crashed run is settled (or rerun) then, not at the next fire.
 *   failure   a store call that failed is tried again after `retryMs`.
 * Skip, never wait: a look that finds the job held returns at once. The replica never compares its
 * wall clock with another's to take a run over (observed time only, unless `maxSkewMs` is set).
 * Runtime-neutral.
 */
import { z } from "zod";
import type { Listener } from "../elector/events.js";
import { ms } from "../elector/options.js";
import { LeaseValidationError } from "../errors.js";
import type { CronSchedule } from "./cron.js";
import { type Attempt, type FireContext, FireJob, type ScheduleEvents } from "./fire-job.js";
import { type JobOptions, jobFields, parseJobOptions, SCHEDULE_DEFAULTS } from "./options.js";

/** The longest the loop sleeps before looking at the wall clock again (a step back is then seen). */
const MAX_SLEEP_MS = 60_000;

export interface ScheduleOptions extends JobOptions {
  /** The cron line: 5 fields (minute first), 6 with seconds first, or a nickname (`@daily`). Parsed by croner. */
  cron: string;
  /** IANA time zone the line is read in. Default UTC. */
  timezone?: string;
  /**
   * Fires older than `maxLateMs` that no replica ran: `skip` reports them missed (default);
   * `run-latest` runs the latest of them once, when no newer fire is due.
   */
  missed?: "skip" | "run-latest";
  /**
   * How late (by this replica's clock) a fire may still start. Keep it above the wall-clock skew
   * between replicas: within it, a replica whose clock runs ahead runs the next fire early rather
   * than reporting the fires before it missed. Default 10000.
   */
  maxLateMs?: number;
  /** After a failed store call, look again this soon. Default 1000. */
  retryMs?: number;
  /** Aborting it stops the job, as `stop()` does. */
  signal?: AbortSignal;
  /** The job: called once per fire on the one replica that claimed it. */
  fn: (context: FireContext) => unknown;
}

const scheduleSchema = z.strictObject(
  {
    ...jobFields,
    cron: z.string({ error: "expected a cron line" }),
    timezone: z.string({ error: "expected an IANA time zone name" }).optional(),
    missed: z.enum(["skip", "run-latest"], { error: 'expected "skip" or "run-latest"' }).optional(),
    maxLateMs: ms("maxLateMs").optional(),
    retryMs: ms("the retry interval").positive({ error: "expected more than 0 ms" }).optional(),
    signal: z
      .custom<AbortSignal>((s) => typeof (s as AbortSignal | undefined)?.addEventListener === "function", {
        error: "expected an AbortSignal",
      })
      .optional(),
    fn: z.custom<ScheduleOptions["fn"]>((f) => typeof f === "function", {
      error: "expected a function (context) => result",
    }),
  },
  { error: "expected an options object with store, name, cron and fn" },
);

/** Starts a scheduled job on this replica. Throws `LeaseValidationError` naming every bad option. */
export function schedule(options: ScheduleOptions): ScheduledJob {
  return new ScheduledJob(options);
}

export class ScheduledJob {
  readonly name: string;
  readonly identity: string;
  private readonly job: FireJob;
  private readonly cron: CronSchedule;
  private readonly fn: ScheduleOptions["fn"];
  private readonly maxLateMs: number;
  private readonly missedPolicy: "skip" | "run-latest";
  private readonly retryMs: number;
  private stopped = false;
  /** Looks run one at a time, in order. */
  private queue: Promise<unknown> = Promise.resolve();
  private nextFireAt: number | undefined;
  /** Monotonic instant of the next extra look (a held record's expiry, a retry). */
  private recheckAt: number | undefined;
  private wake = new AbortController();
  private runEnded: Promise<unknown> = Promise.resolve();
  private readonly loopEnded: Promise<void>;

  constructor(options: ScheduleOptions) {
    if (typeof options !== "object" || options === null) {
      throw new LeaseValidationError("schedule options", [
        { path: "", message: "expected an options object with store, name, cron and fn" },
      ]);
    }
    const { o, job, cron } = parseJobOptions("schedule options", scheduleSchema, options, (p) => ({
      cron: p.cron,
      timezone: p.timezone,
    }));
    this.cron = cron!;
    this.job = new FireJob(job, cron);
    this.name = job.name;
    this.identity = job.identity;
    this.fn = o.fn;
    this.maxLateMs = o.maxLateMs ?? SCHEDULE_DEFAULTS.maxLateMs;
    this.missedPolicy = o.missed ?? "skip";
    this.retryMs = o.retryMs ?? SCHEDULE_DEFAULTS.retryMs;
    const signal = o.signal;
    if (signal?.aborted) this.stopped = true;
    signal?.addEventListener("abort", () => void this.stop(), { once: true });
    this.loopEnded = this.loop();
  }

  on<K extends keyof ScheduleEvents>(type: K, listener: Listener<ScheduleEvents[K]>): () => void {
    return this.job.on(type, listener);
  }

  /** The run of this replica under way, if any. */
  get running(): FireContext | undefined {
    return this.job.running?.context;
  }

  /** The next fire this replica will wake for. */
  get nextFire(): Date | undefined {
    return this.nextFireAt === undefined ? undefined : new Date(this.nextFireAt);
  }

  /**
   * Stops waking. A run under way has its signal aborted; resolves once it has returned and its
   * finish is written, or once its window has closed, whichever comes first.
   */
  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.wake.abort();
    }
    await this.loopEnded;
    // A look in flight may have claimed already: its run is then under way, and is waited for.
    await this.queue;
    const run = this.job.running;
    run?.stop();
    const clock = this.job.s.clock;
    await (run ? Promise.race([this.runEnded, clock.sleep(run.until - clock.now())]) : this.runEnded);
  }

  private async loop(): Promise<void> {
    const clock = this.job.s.clock;
    this.nextFireAt = this.cron.next(clock.wallNow());
    await this.look(undefined);
    while (!this.stopped) {
      const wall = clock.wallNow();
      const now = clock.now();
      if (this.nextFireAt !== undefined && this.nextFireAt <= wall) {
        // Woken late (a pause, a busy machine): the latest fire due is the one this look is for.
        const wokeFor = this.cron.latest(wall) ?? this.nextFireAt;
        this.nextFireAt = this.cron.next(wall);
        await this.look(wokeFor);
        continue;
      }
      if (this.recheckAt !== undefined && this.recheckAt <= now) {
        this.recheckAt = undefined;
        await this.look(undefined);
        continue;
      }
      // A wall clock stepped back (NTP) makes the next fire earlier than the one computed before.
      const upcoming = this.cron.next(wall);
      if (upcoming !== undefined && (this.nextFireAt === undefined || upcoming < this.nextFireAt)) {
        this.nextFireAt = upcoming;
      }
      // Slept on the monotonic clock, woken at least once a minute to see the wall clock again.
      const delay = Math.min(
        MAX_SLEEP_MS,
        this.nextFireAt === undefined ? Infinity : this.nextFireAt - wall,
        this.recheckAt === undefined ? Infinity : this.recheckAt - now,
      );
      if (this.wake.signal.aborted) this.wake = new AbortController();
      await clock.sleep(delay, this.wake.signal);
    }
  }

  /** One look, queued behind any other; what it found decides the next extra look. */
  private look(wokeFor: number | undefined): Promise<unknown> {
    const task = async () => {
      if (this.stopped) return;
      const attempt = await this.job.look({
        ...(wokeFor === undefined ? {} : { wokeFor }),
        maxLateMs: this.maxLateMs,
        missed: this.missedPolicy,
        mayClaim: () => !this.stopped,
      });
      this.after(attempt);
    };
    this.queue = this.queue.then(task, task);
    return this.queue;
  }

  private after(attempt: Attempt): void {
    const clock = this.job.s.clock;
    if (attempt.kind === "claimed") {
      const ended = this.job.execute(attempt.run, this.fn).then(() => {
        // Catch up at once: a fire that came due before this run began may still be in time.
        this.wake.abort();
        return this.look(undefined);
      });
      this.runEnded = ended;
      return;
    }
    let at: number | undefined;
    if (attempt.kind === "failed") at = clock.now() + this.retryMs;
    else if (attempt.kind === "skipped" && attempt.stored?.record.holder && !this.job.running) {
      const expiry = this.job.takeoverAt(attempt.stored);
      if (Number.isFinite(expiry)) at = expiry;
    }
    if (at !== undefined && (this.recheckAt === undefined || at < this.recheckAt)) {
      this.recheckAt = at;
      this.wake.abort();
    }
  }
}
