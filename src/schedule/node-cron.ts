/**
 * node-cron 4.6's `RunCoordinator` on leasehold (docs/schedule.md, "node-cron"). A task scheduled
 * with `{ name, distributed: true, runCoordinator }` asks `shouldRun(key, ttlMs)` before each
 * fire, with one key per fire (`<task name>:<slot ISO>`), and `onComplete(key)` after the run.
 * Here the slot is the fire of the task's record (`name(task)`, default the task name under
 * `prefix`): `shouldRun` claims it (`ttlMs`, node-cron's `distributedLease`, is `lockAtMostFor`)
 * and `onComplete` finishes it, by the same record rules as `schedule()` (./fire-job.ts): a fire
 * runs at most once, whatever the clocks, restarts or duplicate calls.
 *
 * What the seam loses: node-cron gives the task no term and no signal, so nothing stops a run at
 * `ttlMs` and nothing downstream can fence it. `coordinator.context(key)` (or `(task, date)`)
 * hands the run's `FireContext` (term, signal, stillLeader) to a task that asks for it; `schedule()`
 * gives it to every run. node-cron's `LockProvider` (`acquire(key, ttlMs)` / `release(key)`) is in
 * its repository but in no published release (4.6.0 is the latest): not adapted yet.
 * Runtime-neutral (node-cron itself is Node-only).
 */
import { z } from "zod";
import type { Listener } from "../elector/events.js";
import { type FieldIssue, LeaseValidationError } from "../errors.js";
import { prefixSchema, validateName, zodIssues } from "../lease.js";
import { type FireContext, FireJob, type Run, type ScheduleEvents } from "./fire-job.js";
import { type JobOptions, jobFields, resolveJob } from "./options.js";

/** node-cron's seam, as 4.6.0 declares it (structural: leasehold does not depend on node-cron). */
export interface RunCoordinator {
  shouldRun(key: string, ttlMs: number): boolean | Promise<boolean>;
  onComplete?(key: string): void | Promise<void>;
}

export interface NodeCronCoordinatorOptions extends Omit<JobOptions, "name" | "lockAtMostFor"> {
  /** Prepended to the task name to make the record's name (default none). */
  prefix?: string;
  /** The record's name for a task name, instead of `prefix + task` (it must be a valid lease name). */
  name?: (task: string) => string;
}

export interface LeaseholdRunCoordinator extends RunCoordinator {
  shouldRun(key: string, ttlMs: number): Promise<boolean>;
  onComplete(key: string): Promise<void>;
  /** The run under way for a key (`<task>:<slot ISO>`), or for a task and its fire (`ctx.date`). */
  context(key: string): FireContext | undefined;
  context(task: string, fire: Date): FireContext | undefined;
  on<K extends keyof ScheduleEvents>(type: K, listener: Listener<ScheduleEvents[K]>): () => void;
}

/** node-cron's key: the task name, ":", the slot as `Date#toISOString()`. */
const KEY = /^(.+):(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)$/;

const { lockAtMostFor: _fromNodeCron, ...fieldsButLockAtMostFor } = jobFields;

const coordinatorSchema = z.strictObject(
  {
    ...fieldsButLockAtMostFor,
    name: z.custom<(task: string) => string>((f) => typeof f === "function", {
      error: "expected a function (task name) => record name",
    }),
    prefix: prefixSchema,
  },
  { error: "expected an options object with store" },
);

export function leaseholdRunCoordinator(options: NodeCronCoordinatorOptions): LeaseholdRunCoordinator {
  const parsed = coordinatorSchema.partial({ name: true, prefix: true }).safeParse(options);
  if (!parsed.success) throw new LeaseValidationError("run coordinator options", zodIssues(parsed.error));
  const { name: nameOf, prefix = "", ...fields } = parsed.data;
  const jobs = new Map<string, FireJob>();
  const runs = new Map<string, { job: FireJob; run: Run }>();
  const listeners: Array<(job: FireJob) => void> = [];

  const jobFor = (task: string, ttlMs: number): FireJob => {
    const name = validateName(nameOf ? nameOf(task) : `${prefix}${task}`);
    const key = `${name}\n${ttlMs}`;
    let job = jobs.get(key);
    if (!job) {
      const issues: FieldIssue[] = [];
      const resolved = resolveJob({ ...fields, name, lockAtMostFor: ttlMs }, issues);
      if (issues.length > 0) throw new LeaseValidationError("run coordinator options", issues);
      job = new FireJob(resolved, undefined);
      for (const attach of listeners) attach(job);
      jobs.set(key, job);
    }
    return job;
  };
  const parse = (key: string): { task: string; fire: number } => {
    const match = KEY.exec(key);
    if (!match) {
      throw new LeaseValidationError("node-cron key", [
        { path: "key", message: `expected "<task name>:<slot ISO 8601>", got ${JSON.stringify(key)}` },
      ]);
    }
    return { task: match[1]!, fire: Date.parse(match[2]!) };
  };

  function context(keyOrTask: string, fire?: Date): FireContext | undefined {
    const key = fire === undefined ? keyOrTask : `${keyOrTask}:${fire.toISOString()}`;
    return runs.get(key)?.run.context;
  }

  return {
    async shouldRun(key, ttlMs) {
      const { task, fire } = parse(key);
      const job = jobFor(task, ttlMs);
      const attempt = await job.look({ given: fire, maxLateMs: Number.POSITIVE_INFINITY, missed: "skip" });
      // A store failure rejects: node-cron then skips the fire (fail-closed) and says why.
      if (attempt.kind === "failed") throw attempt.error;
      if (attempt.kind !== "claimed") return false;
      runs.set(key, { job, run: attempt.run });
      return true;
    },
    async onComplete(key) {
      const entry = runs.get(key);
      if (!entry) return;
      runs.delete(key);
      await entry.job.finish(entry.run);
    },
    context,
    on(type, listener) {
      const offs: Array<() => void> = [];
      const attach = (job: FireJob) => offs.push(job.on(type, listener));
      for (const job of jobs.values()) attach(job);
      listeners.push(attach);
      return () => {
        listeners.splice(listeners.indexOf(attach), 1);
        for (const off of offs) off();
      };
    },
  };
}
