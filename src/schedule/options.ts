/**
 * Options of a scheduled job, checked once, each field named in the error, with the defaults and
 * the lease timing they imply: a run's record is a lease of `lockAtMostFor + safetyMs`, so the run's
 * window (`sentAt + lockAtMostFor` on the monotonic clock) closes a safety margin before any other
 * replica can count the record expired by observed time (docs/design.md §3). Runtime-neutral.
 */
import { z } from "zod";
import { type Clock, systemClock } from "../clock.js";
import { ms, storeField, timingFields } from "../elector/options.js";
import { type FieldIssue, isLeaseValidationError, LeaseValidationError } from "../errors.js";
import {
  holderSchema,
  type LeaseStore,
  MAX_LEASE_MS,
  MIN_LEASE_MS,
  metadataSchema,
  nameSchema,
  newWriteId,
  zodIssues,
} from "../lease.js";
import { CronSchedule } from "./cron.js";

/** Defaults, in one place for the docs (docs/schedule.md) and the CLI. */
export const SCHEDULE_DEFAULTS = {
  lockAtMostFor: 10 * 60_000,
  lockAtLeastFor: 0,
  maxLateMs: 10_000,
  retryMs: 1000,
  /** For a one-fire entry (a serverless trigger), which has no memory to observe a record with. */
  givenFireMaxSkewMs: 1000,
} as const;

/** The options every entry shares: the job's record, its timing and its policies. */
export interface JobOptions {
  /** Where the job's record lives. */
  store: LeaseStore;
  /** The job's record: one per job, named like a lease (docs/design.md §1). */
  name: string;
  /** This replica's identity, written as the holder of its runs. Default: a random id. */
  identity?: string;
  /**
   * The longest a run may hold the job, in ms. At that instant (on the monotonic clock, from when
   * the claim was sent) the run's `signal` aborts and `stillLeader()` turns false; another replica
   * may claim a fire from a safety margin later. Default 10 minutes: set it to what a run may take.
   */
  lockAtMostFor?: number;
  /**
   * Hold the job at least this long from a run's start, in ms: fires that come due before then are
   * not run (reported missed, reason `held`). At most `lockAtMostFor`. Default 0.
   */
  lockAtLeastFor?: number;
  /** Margin between a run's window and the record's lease. Default lockAtMostFor / 10. */
  safetyMs?: number;
  /** A fire given up by every replica (crashed runner): `skip` reports it missed (default); `rerun` runs it again under the next term. */
  onCrash?: "skip" | "rerun";
  /**
   * When set, a record already stale by its own stamps (`renewedAt + leaseMs + maxSkewMs` before
   * this clock) is taken at once, without observing it first. Off for `schedule()` (a long-lived
   * replica observes, whatever the clocks say); 1000 ms for a one-fire entry, which has no memory.
   */
  maxSkewMs?: number;
  /** A store call slower than this counts as failed (a write: ambiguous). Default min(lockAtMostFor, 10 s). */
  callTimeoutMs?: number;
  /** Small string map written with each run's record (e.g. host and pid). */
  metadata?: Record<string, string>;
  clock?: Clock;
}

export interface ResolvedJob {
  store: LeaseStore;
  name: string;
  identity: string;
  lockAtMostFor: number;
  lockAtLeastFor: number;
  safetyMs: number;
  /** The record's lease while a run holds it: lockAtMostFor + safetyMs. */
  leaseMs: number;
  onCrash: "skip" | "rerun";
  maxSkewMs: number | undefined;
  callTimeoutMs: number;
  metadata: Record<string, string>;
  clock: Clock;
}

const policy = <T extends string>(values: readonly [T, ...T[]]) =>
  z.enum(values, { error: `expected ${values.map((v) => `"${v}"`).join(" or ")}` });

export const jobFields = {
  store: storeField(["get", "put"], "expected a LeaseStore (an object with get and put)"),
  name: nameSchema,
  identity: holderSchema.optional(),
  lockAtMostFor: ms("lockAtMostFor").optional(),
  lockAtLeastFor: ms("lockAtLeastFor").optional(),
  safetyMs: ms("the safety margin").optional(),
  onCrash: policy(["skip", "rerun"]).optional(),
  maxSkewMs: ms("the clock skew bound").optional(),
  callTimeoutMs: ms("the store call timeout").positive({ error: "expected more than 0 ms" }).optional(),
  metadata: metadataSchema.optional(),
  clock: timingFields.clock,
};

type JobFields = z.output<z.ZodObject<typeof jobFields>>;

/** The relations between the fields, and the defaults they imply. */
export function resolveJob(o: JobFields, issues: FieldIssue[], defaults: { maxSkewMs?: number } = {}): ResolvedJob {
  const lockAtMostFor = o.lockAtMostFor ?? SCHEDULE_DEFAULTS.lockAtMostFor;
  const lockAtLeastFor = o.lockAtLeastFor ?? SCHEDULE_DEFAULTS.lockAtLeastFor;
  const safetyMs = o.safetyMs ?? Math.max(1, Math.floor(lockAtMostFor / 10));
  const leaseMs = lockAtMostFor + safetyMs;
  if (lockAtMostFor < MIN_LEASE_MS) {
    issues.push({ path: "lockAtMostFor", message: `expected at least ${MIN_LEASE_MS} ms, got ${lockAtMostFor}` });
  } else if (leaseMs > MAX_LEASE_MS) {
    issues.push({
      path: "lockAtMostFor",
      message: `expected lockAtMostFor + safetyMs at most ${MAX_LEASE_MS} ms (24 h), got ${lockAtMostFor} + ${safetyMs}`,
    });
  }
  if (lockAtLeastFor > lockAtMostFor) {
    issues.push({
      path: "lockAtLeastFor",
      message: `expected at most lockAtMostFor (${lockAtMostFor} ms), got ${lockAtLeastFor}`,
    });
  }
  return {
    store: o.store as LeaseStore,
    name: o.name,
    identity: o.identity ?? `job-${newWriteId().slice(0, 8)}`,
    lockAtMostFor,
    lockAtLeastFor,
    safetyMs,
    leaseMs,
    onCrash: o.onCrash ?? "skip",
    maxSkewMs: o.maxSkewMs ?? defaults.maxSkewMs,
    callTimeoutMs: o.callTimeoutMs ?? Math.min(lockAtMostFor, 10_000),
    metadata: o.metadata ?? {},
    clock: (o.clock as Clock | undefined) ?? systemClock,
  };
}

/** Parses `options` with `schema`, resolves the job, and reads the cron line: one error naming every bad field. */
export function parseJobOptions<S extends z.ZodObject>(
  what: string,
  schema: S,
  options: unknown,
  cronOf: (o: z.output<S>) => { cron?: string | undefined; timezone?: string | undefined },
  defaults: { maxSkewMs?: number } = {},
): { o: z.output<S>; job: ResolvedJob; cron: CronSchedule | undefined } {
  const parsed = schema.safeParse(options);
  if (!parsed.success) throw new LeaseValidationError(what, zodIssues(parsed.error));
  const o = parsed.data;
  const issues: FieldIssue[] = [];
  const job = resolveJob(o as JobFields, issues, defaults);
  let cron: CronSchedule | undefined;
  const line = cronOf(o);
  if (line.cron !== undefined) {
    try {
      cron = new CronSchedule(line.cron, line.timezone, what);
    } catch (error) {
      if (!isLeaseValidationError(error)) throw error;
      issues.push(...error.issues);
    }
  } else if (line.timezone !== undefined) {
    issues.push({ path: "timezone", message: "expected only together with cron" });
  }
  if (issues.length > 0) throw new LeaseValidationError(what, issues);
  return { o, job, cron };
}
