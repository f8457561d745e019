/**
 * `runFire({ store, name, fire, fn })`: one fire a platform delivered (EventBridge, Cloud
 * Scheduler, a Workers Cron Trigger, a queue), run at most once across every delivery of it. The
 * platform's fire time is the key: a duplicated or retried delivery finds the record at that fire
 * (or past it) and does not run (docs/schedule.md, "Serverless"). The same record rules as
 * `schedule()` (./fire-job.ts); only the fire is given, not chosen. An invocation has no memory of
 * earlier reads, so a run left unfinished by a crashed invocation is judged by its stamps:
 * expired once `renewedAt + leaseMs + maxSkewMs` has passed on this clock (`maxSkewMs` 1000 by
 * default: the platforms' machines keep their clocks in sync). Runtime-neutral.
 */
import { z } from "zod";
import { LeaseValidationError } from "../errors.js";
import { type FireContext, FireJob, type ScheduleEvents } from "./fire-job.js";
import { type JobOptions, jobFields, parseJobOptions, SCHEDULE_DEFAULTS } from "./options.js";

export interface RunFireOptions<T> extends JobOptions {
  /** The fire: its scheduled instant as the platform gave it (a Date, epoch ms, or an ISO 8601 string). */
  fire: Date | number | string;
  /** The cron line the platform fires on, when known: fires skipped since the record's are then reported missed. */
  cron?: string;
  timezone?: string;
  /** Listeners for this call's events (`missed` is the one a serverless job usually forwards). */
  on?: { [K in keyof ScheduleEvents]?: (event: ScheduleEvents[K]) => void };
  fn: (context: FireContext) => Promise<T> | T;
}

/** What one delivery came to. A store failure rejects (let the platform retry); `fn`'s error rejects after the fire is settled. */
export type FireResult<T> =
  | { status: "ran"; fire: Date; term: number; value: T }
  /** Another delivery's run holds the job. */
  | { status: "skipped-held"; fire: Date }
  /** The fire (or a later one) is already claimed or settled. */
  | { status: "skipped-done"; fire: Date };

const runFireSchema = z.strictObject(
  {
    ...jobFields,
    fire: z.union([z.date(), z.number(), z.string()], {
      error: "expected a Date, epoch milliseconds or an ISO 8601 string",
    }),
    cron: z.string({ error: "expected a cron line" }).optional(),
    timezone: z.string({ error: "expected an IANA time zone name" }).optional(),
    on: z.record(z.string(), z.unknown(), { error: "expected an object of listeners" }).optional(),
    fn: z.custom<(context: FireContext) => unknown>((f) => typeof f === "function", {
      error: "expected a function (context) => result",
    }),
  },
  { error: "expected an options object with store, name, fire and fn" },
);

/** A fire time as given (Date, ms, ISO string) as epoch ms; `LeaseValidationError` naming `path` otherwise. */
export function fireTime(value: unknown, what: string, path = "fire"): number {
  const ms = value instanceof Date ? value.getTime() : typeof value === "string" ? Date.parse(value) : value;
  if (typeof ms !== "number" || !Number.isSafeInteger(ms) || ms < 0) {
    throw new LeaseValidationError(what, [
      {
        path,
        message: `expected a fire time (a valid Date, epoch milliseconds or an ISO 8601 string), got ${String(value)}`,
      },
    ]);
  }
  return ms;
}

export async function runFire<T>(options: RunFireOptions<T>): Promise<FireResult<T>> {
  const { o, job, cron } = parseJobOptions(
    "runFire options",
    runFireSchema,
    options,
    (p) => ({ cron: p.cron, timezone: p.timezone }),
    { maxSkewMs: SCHEDULE_DEFAULTS.givenFireMaxSkewMs },
  );
  const at = fireTime(o.fire, "runFire options");
  const fire = new Date(at);
  const jobOf = new FireJob(job, cron);
  for (const [type, listener] of Object.entries(options.on ?? {})) {
    if (typeof listener === "function") jobOf.on(type as keyof ScheduleEvents, listener as (event: unknown) => void);
  }
  const attempt = await jobOf.look({ given: at, maxLateMs: Number.POSITIVE_INFINITY, missed: "skip" });
  switch (attempt.kind) {
    case "claimed": {
      const result = await jobOf.execute(attempt.run, options.fn);
      if (!result.ok) throw result.error;
      return { status: "ran", fire, term: attempt.run.term, value: result.value };
    }
    case "skipped":
      return { status: attempt.why === "held" ? "skipped-held" : "skipped-done", fire };
    case "failed":
      throw attempt.error;
    default:
      return { status: "skipped-done", fire };
  }
}
