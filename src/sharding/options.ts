/**
 * Sharded elector options: each field on its own, then the relations between them, with messages
 * that name the field and what was expected. Timing defaults are the elector's (15 s lease, renew
 * every 5 s, retry every 2 s); the sharding ones are explained in docs/sharding.md.
 */
import { z } from "zod";
import { type FieldIssue, LeaseValidationError } from "../errors.js";
import { leaseMsSchema, zodIssues } from "../lease.js";
import { validateBucketCount } from "./bucket-of.js";
import { memberName, validateGroup, validateMemberId } from "./layout.js";

const ms = (what: string) =>
  z
    .number({ error: `expected ${what} in milliseconds` })
    .finite({ error: "expected a finite number" })
    .nonnegative({ error: "expected a non-negative number" });

const fieldsSchema = z.strictObject(
  {
    store: z.custom<object>(
      (s) =>
        typeof s === "object" &&
        s !== null &&
        ["get", "put", "list"].every((k) => typeof (s as Record<string, unknown>)[k] === "function"),
      { error: "expected a LeaseStore that can list (an object with get, put and list)" },
    ),
    group: z.unknown(),
    identity: z.unknown().optional(),
    buckets: z.unknown(),
    leaseMs: leaseMsSchema.default(15_000),
    renewMs: ms("the renewal interval").positive({ error: "expected more than 0 ms" }).optional(),
    retryMs: ms("the retry interval").positive({ error: "expected more than 0 ms" }).optional(),
    safetyMs: ms("the safety margin").optional(),
    jitter: z
      .number({ error: "expected a number" })
      .min(0, { error: "expected 0 to 1" })
      .max(1, { error: "expected 0 to 1" })
      .default(0.2),
    maxSkewMs: ms("the clock skew bound").default(1000),
    callTimeoutMs: ms("the store call timeout").positive({ error: "expected more than 0 ms" }).optional(),
    graceMs: ms("the hand-off grace period").optional(),
    settleMs: ms("the settle period").optional(),
    pollMs: ms("the poll interval").positive({ error: "expected more than 0 ms" }).optional(),
    handoffBatch: z
      .number({ error: "expected a number of buckets" })
      .int({ error: "expected a whole number" })
      .min(1, { error: "expected at least 1" })
      .optional(),
    clock: z
      .custom<object>(
        (c) =>
          typeof c === "object" &&
          c !== null &&
          ["now", "wallNow", "sleep"].every((k) => typeof (c as Record<string, unknown>)[k] === "function"),
        { error: "expected a Clock (an object with now, wallNow and sleep)" },
      )
      .optional(),
    random: z
      .custom<() => number>((r) => typeof r === "function", { error: "expected a function returning [0, 1)" })
      .optional(),
    // runSharded's own options ride along; validateRunShardedArguments checks them.
    signal: z.unknown().optional(),
    onElector: z.unknown().optional(),
  },
  { error: "expected an options object with store, group and buckets" },
);

export interface ResolvedShardedOptions {
  group: string;
  identity: string;
  memberName: string;
  /** The count a new group starts with; an existing group's config record wins. */
  buckets: number;
  leaseMs: number;
  renewMs: number;
  retryMs: number;
  safetyMs: number;
  jitter: number;
  maxSkewMs: number;
  callTimeoutMs: number;
  graceMs: number;
  settleMs: number;
  pollMs: number;
  /** `undefined`: ceil(buckets / 8), recomputed when the count changes. */
  handoffBatch: number | undefined;
}

export function resolveShardedOptions(options: unknown): ResolvedShardedOptions {
  const parsed = fieldsSchema.safeParse(options);
  if (!parsed.success) throw new LeaseValidationError("sharded elector options", zodIssues(parsed.error));
  const o = parsed.data;
  const issues: FieldIssue[] = [];
  const check = <T>(fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (error) {
      if (error instanceof LeaseValidationError) issues.push(...error.issues);
      else throw error;
      return undefined;
    }
  };
  const group = check(() => validateGroup(o.group));
  const identity = check(() =>
    o.identity === undefined ? `m-${crypto.randomUUID().slice(0, 8)}` : validateMemberId(o.identity),
  );
  const buckets = check(() => validateBucketCount(o.buckets, "buckets", "sharded elector options"));
  const safetyMs = o.safetyMs ?? Math.max(1, Math.floor(o.leaseMs / 10));
  const renewMs = o.renewMs ?? Math.floor(o.leaseMs / 3);
  const retryMs = o.retryMs ?? Math.max(1, Math.floor(o.leaseMs / 7.5));
  if (safetyMs >= o.leaseMs) {
    issues.push({ path: "safetyMs", message: `expected less than leaseMs (${o.leaseMs}), got ${safetyMs}` });
  }
  if (renewMs >= o.leaseMs - safetyMs) {
    issues.push({
      path: "renewMs",
      message: `expected less than leaseMs - safetyMs (${o.leaseMs} - ${safetyMs} = ${o.leaseMs - safetyMs}), got ${renewMs}: a member must renew its session before its safe window closes`,
    });
  }
  if (retryMs > o.leaseMs) {
    issues.push({ path: "retryMs", message: `expected at most leaseMs (${o.leaseMs}), got ${retryMs}` });
  }
  if (issues.length > 0 || group === undefined || identity === undefined || buckets === undefined) {
    throw new LeaseValidationError("sharded elector options", issues);
  }
  return {
    group,
    identity,
    memberName: memberName(group, identity),
    buckets,
    leaseMs: o.leaseMs,
    renewMs,
    retryMs,
    safetyMs,
    jitter: o.jitter,
    maxSkewMs: o.maxSkewMs,
    callTimeoutMs: o.callTimeoutMs ?? renewMs,
    graceMs: o.graceMs ?? o.leaseMs,
    settleMs: o.settleMs ?? o.leaseMs,
    pollMs: o.pollMs ?? renewMs,
    handoffBatch: o.handoffBatch,
  };
}

/** runSharded's own arguments, checked before anything joins the group. */
export function validateRunShardedArguments(options: unknown, fn: unknown): void {
  const o = (typeof options === "object" && options !== null ? options : {}) as Record<string, unknown>;
  const signal = o.signal as { aborted?: unknown; addEventListener?: unknown } | undefined;
  const issues: FieldIssue[] = [];
  if (typeof fn !== "function") issues.push({ path: "fn", message: "expected a function (context) => result" });
  if (signal !== undefined && (typeof signal?.aborted !== "boolean" || typeof signal.addEventListener !== "function")) {
    issues.push({ path: "signal", message: "expected an AbortSignal" });
  }
  if (o.onElector !== undefined && typeof o.onElector !== "function") {
    issues.push({ path: "onElector", message: "expected a function (elector) => void" });
  }
  if (issues.length > 0) throw new LeaseValidationError("runSharded arguments", issues);
}
