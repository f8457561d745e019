/**
 * The fire time each serverless scheduler delivers, read from where the platform puts it, for
 * `runFire({ fire, ... })` (docs/schedule.md, "Serverless"). Each platform delivers at least once
 * or retries a failed invocation, so the same fire can arrive twice: the fire time, not the
 * delivery, is the key. Runtime-neutral.
 */
import { LeaseValidationError } from "../errors.js";
import { fireTime } from "./run-fire.js";

/**
 * An EventBridge scheduled rule's event (`{ "detail-type": "Scheduled Event", time: "...Z", ... }`)
 * as a Lambda receives it: `time` is the fire. For EventBridge Scheduler, whose payload is yours,
 * put `"time": "<aws.scheduler.scheduled-time>"` in the target's input.
 */
export function fireFromEventBridge(event: unknown): Date {
  const time = (event as { time?: unknown } | null)?.time;
  if (typeof time !== "string") {
    throw new LeaseValidationError("EventBridge event", [
      { path: "time", message: "expected the scheduled time, an ISO 8601 string (a scheduled rule's event)" },
    ]);
  }
  return new Date(fireTime(time, "EventBridge event", "time"));
}

/** A Workers Cron Trigger's `scheduled(controller, env, ctx)`: `controller.scheduledTime` (epoch ms) is the fire. */
export function fireFromScheduledController(controller: unknown): Date {
  const at = (controller as { scheduledTime?: unknown } | null)?.scheduledTime;
  return new Date(fireTime(at, "scheduled controller", "scheduledTime"));
}

/** The header Cloud Scheduler sets on each HTTP target request: the fire, RFC 3339 UTC. */
export const CLOUD_SCHEDULER_HEADER = "X-CloudScheduler-ScheduleTime";

/** A Cloud Scheduler HTTP request (a `Request`, its `Headers`, or Node's header object): `X-CloudScheduler-ScheduleTime` is the fire. */
export function fireFromCloudScheduler(request: unknown): Date {
  const value = headerOf(request, CLOUD_SCHEDULER_HEADER);
  if (value === undefined) {
    throw new LeaseValidationError("Cloud Scheduler request", [
      {
        path: CLOUD_SCHEDULER_HEADER,
        message: "expected the header Cloud Scheduler sets (the scheduled time, RFC 3339)",
      },
    ]);
  }
  return new Date(fireTime(value, "Cloud Scheduler request", CLOUD_SCHEDULER_HEADER));
}

function headerOf(request: unknown, name: string): string | undefined {
  if (request === null || typeof request !== "object") return undefined;
  const headers = "headers" in request ? (request as { headers: unknown }).headers : request;
  if (headers && typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  if (headers && typeof headers === "object") {
    for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
      if (key.toLowerCase() !== name.toLowerCase()) continue;
      if (typeof value === "string") return value;
      if (Array.isArray(value) && typeof value[0] === "string") return value[0];
    }
  }
  return undefined;
}
