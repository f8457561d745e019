/**
 * Sharded elector options: each field on its own, then the relations between them, with messages
 * that name the field and what was expected. Timing defaults are the elector's (15 s lease, renew
 * every 5 s, retry every 2 s); the sharding ones are explained in docs/sharding.md.
 */
import { z } from "zod";
import {
  ms,
  parseClassOptions,
  type ResolvedTiming,
  resolveTiming,
  storeField,
  timingFields,
  validateCallbackArguments,
} from "../elector/options.js";
import { type FieldIssue, isLeaseValidationError, LeaseValidationError } from "../errors.js";
import { validateBucketCount } from "./bucket-of.js";
import { memberName, validateGroup, validateMemberId } from "./layout.js";

const fieldsSchema = z.strictObject(
  {
    store: storeField(["get", "put", "list"], "expected a LeaseStore that can list (an object with get, put and list)"),
    group: z.unknown(),
    identity: z.unknown().optional(),
    buckets: z.unknown(),
    ...timingFields,
    graceMs: ms("the hand-off grace period").optional(),
    settleMs: ms("the settle period").optional(),
    pollMs: ms("the poll interval").positive({ error: "expected more than 0 ms" }).optional(),
    handoffBatch: z
      .number({ error: "expected a number of buckets" })
      .int({ error: "expected a whole number" })
      .min(1, { error: "expected at least 1" })
      .optional(),
  },
  { error: "expected an options object with store, group and buckets" },
);

export interface ResolvedShardedOptions extends ResolvedTiming {
  group: string;
  identity: string;
  memberName: string;
  /** The count a new group starts with; an existing group's config record wins. */
  buckets: number;
  settleMs: number;
  pollMs: number;
  /** `undefined`: ceil(buckets / 8), recomputed when the count changes. */
  handoffBatch: number | undefined;
}

export function resolveShardedOptions(options: unknown): ResolvedShardedOptions {
  const o = parseClassOptions(options, fieldsSchema, "sharded elector options", "runSharded", "ShardedElector");
  const issues: FieldIssue[] = [];
  const check = <T>(fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (error) {
      if (isLeaseValidationError(error)) issues.push(...error.issues);
      else throw error;
      return undefined;
    }
  };
  const group = check(() => validateGroup(o.group));
  const identity = check(() =>
    o.identity === undefined ? `m-${crypto.randomUUID().slice(0, 8)}` : validateMemberId(o.identity),
  );
  const buckets = check(() => validateBucketCount(o.buckets, "buckets", "sharded elector options"));
  const timing = resolveTiming(o, issues, "a member");
  if (issues.length > 0 || group === undefined || identity === undefined || buckets === undefined) {
    throw new LeaseValidationError("sharded elector options", issues);
  }
  return {
    group,
    identity,
    memberName: memberName(group, identity),
    buckets,
    ...timing,
    settleMs: o.settleMs ?? o.leaseMs,
    pollMs: o.pollMs ?? timing.renewMs,
    handoffBatch: o.handoffBatch,
  };
}

/** runSharded's own arguments, checked before anything joins the group. */
export function validateRunShardedArguments(options: unknown, fn: unknown): void {
  validateCallbackArguments("runSharded", options, fn);
}
