/**
 * `leasehold/schedule`: scheduled jobs that run once per fire across replicas, with a fencing
 * token (docs/schedule.md). `schedule()` for a long-running process, `runFire()` with the
 * platform's fire time for serverless triggers, and adapters for node-cron's `RunCoordinator` and
 * croner. One record per job; its `fire` is protocol state the server guards (src/term-rules.ts).
 */
export { CronSchedule } from "./cron.js";
export { type CronerCallbackOptions, type CronerJob, cronerCallback } from "./croner.js";
export type { FireContext, ScheduleEvents } from "./fire-job.js";
export type { MissReason } from "./fire-plan.js";
export { ScheduleMetrics, type TrackedJob } from "./metrics.js";
export {
  type LeaseholdRunCoordinator,
  leaseholdRunCoordinator,
  type NodeCronCoordinatorOptions,
  type RunCoordinator,
} from "./node-cron.js";
export { type JobOptions, SCHEDULE_DEFAULTS } from "./options.js";
export { type FireResult, type RunFireOptions, runFire } from "./run-fire.js";
export { ScheduledJob, type ScheduleOptions, schedule } from "./scheduler.js";
export {
  CLOUD_SCHEDULER_HEADER,
  fireFromCloudScheduler,
  fireFromEventBridge,
  fireFromScheduledController,
} from "./serverless.js";
