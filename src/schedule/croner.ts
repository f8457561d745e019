/**
 * A croner job that runs on one replica per fire (docs/schedule.md, "croner"):
 *
 *   new Cron("0 2 * * *", { timezone: "Europe/Paris" }, cronerCallback({ store, name: "jobs/billing" }, fn))
 *
 * croner keeps its own timer and options (startAt, stopAt, maxRuns, pause); at each trigger the
 * callback takes the job's fire (the latest fire of its pattern at or before croner's trigger time)
 * and looks at the record as `schedule()` does (./fire-plan.ts): the earliest fire due after the
 * record's runs, so a replica whose clock runs ahead never skips fires its peers would still run.
 * `fn` gets the same `FireContext` (term, signal at `lockAtMostFor`, stillLeader). A replica with
 * no trigger for a while does not recheck a crashed run by itself; its next trigger does.
 * Runtime-neutral.
 */
import { z } from "zod";
import type { Listener } from "../elector/events.js";
import { ms } from "../elector/options.js";
import { LeaseValidationError } from "../errors.js";
import { CronSchedule } from "./cron.js";
import { type FireContext, FireJob, type ScheduleEvents } from "./fire-job.js";
import { type JobOptions, jobFields, parseJobOptions, SCHEDULE_DEFAULTS } from "./options.js";

/** What croner hands its callback (croner 9 to 11): the job itself. Structural, so any of them fits. */
export interface CronerJob {
  currentRun(): Date | null;
  previousRuns(n: number, reference?: Date): Date[];
  getPattern(): string | undefined;
  readonly options: { timezone?: string | undefined };
}

export interface CronerCallbackOptions extends JobOptions {
  /** As `schedule()`'s: fires older than this that no replica ran are missed. Default 10000. */
  maxLateMs?: number;
  missed?: "skip" | "run-latest";
  /** Subscribes to the job's events once, before the first trigger. */
  onJob?: (job: {
    on<K extends keyof ScheduleEvents>(type: K, listener: Listener<ScheduleEvents[K]>): () => void;
  }) => void;
}

const callbackSchema = z.strictObject(
  {
    ...jobFields,
    maxLateMs: ms("maxLateMs").optional(),
    missed: z.enum(["skip", "run-latest"], { error: 'expected "skip" or "run-latest"' }).optional(),
    onJob: z
      .custom<CronerCallbackOptions["onJob"]>((f) => typeof f === "function", { error: "expected a function" })
      .optional(),
  },
  { error: "expected an options object with store and name" },
);

/** The callback to give croner's `new Cron(pattern, options, callback)`. */
export function cronerCallback<T>(
  options: CronerCallbackOptions,
  fn: (context: FireContext) => Promise<T> | T,
): (self: CronerJob) => Promise<void> {
  const { o, job } = parseJobOptions("croner callback options", callbackSchema, options, () => ({}));
  if (typeof fn !== "function") {
    throw new LeaseValidationError("croner callback options", [
      { path: "fn", message: "expected a function (context) => result" },
    ]);
  }
  let fireJob: FireJob | undefined;
  return async (self) => {
    if (!fireJob) {
      // The pattern and zone are croner's, known only now: read once, for naming missed fires.
      const pattern = self.getPattern();
      fireJob = new FireJob(job, pattern === undefined ? undefined : new CronSchedule(pattern, self.options.timezone));
      o.onJob?.(fireJob);
    }
    const triggered = self.currentRun() ?? new Date(job.clock.wallNow());
    const fire = self.previousRuns(1, new Date(triggered.getTime() + 1))[0]?.getTime() ?? triggered.getTime();
    const attempt = await fireJob.look({
      wokeFor: fire,
      maxLateMs: o.maxLateMs ?? SCHEDULE_DEFAULTS.maxLateMs,
      missed: o.missed ?? "skip",
    });
    if (attempt.kind !== "claimed") return;
    const result = await fireJob.execute(attempt.run, fn);
    if (!result.ok) throw result.error;
  };
}
