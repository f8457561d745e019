/**
 * Elector option validation: each field on its own, then the relations between them, with
 * messages that say which field and what was expected. Defaults follow client-go's proportions
 * (15 s lease, renew well before it ends, retry every 2 s).
 */
import { z } from "zod";
import { type FieldIssue, LeaseValidationError } from "../errors.js";
import {
  holderSchema,
  type LeaseStore,
  leaseMsSchema,
  metadataSchema,
  nameSchema,
  storeLimitIssues,
  zodIssues,
} from "../lease.js";
import { DEFAULT_POLL_MS } from "./holder.js";
import { defaultCallTimeoutMs } from "./renewal-schedule.js";

export const ms = (what: string) =>
  z
    .number({ error: `expected ${what} in milliseconds` })
    .finite({ error: "expected a finite number" })
    .nonnegative({ error: "expected a non-negative number" });

/**
 * The fields every campaigner shares (the elector, the sharded elector): lease timing, jitter,
 * the skew bound, the call timeout, and the injected clock and randomness. Checked here, not at
 * first use: a bad clock would otherwise fail inside the election loop.
 */
export const timingFields = {
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
};

/**
 * Options that belong to `runAsLeader`/`runSharded`, not to the class they create: given to the
 * class they would be ignored, so they are refused with where they go instead.
 */
function callbackOnlyIssues(options: unknown, runner: string, cls: string): FieldIssue[] {
  if (typeof options !== "object" || options === null) return [];
  const o = options as Record<string, unknown>;
  const issues: FieldIssue[] = [];
  if ("signal" in o) {
    issues.push({
      path: "signal",
      message: `not an option of new ${cls}: pass it to ${runner}(options, fn), or call ${cls.charAt(0).toLowerCase()}${cls.slice(1)}.stop() to stop`,
    });
  }
  if ("onElector" in o) {
    issues.push({
      path: "onElector",
      message: `not an option of new ${cls}: pass it to ${runner}(options, fn); with new ${cls} you already hold the instance (subscribe with .on before start())`,
    });
  }
  return issues;
}

/**
 * A class's options parsed against `schema`: callback-only options refused first (with where they
 * go), then the fields, each failure a `LeaseValidationError` about `what`.
 */
export function parseClassOptions<T extends z.ZodType>(
  options: unknown,
  schema: T,
  what: string,
  runner: string,
  cls: string,
): z.output<T> {
  const misplaced = callbackOnlyIssues(options, runner, cls);
  if (misplaced.length > 0) throw new LeaseValidationError(what, misplaced);
  const parsed = schema.safeParse(options);
  if (!parsed.success) throw new LeaseValidationError(what, zodIssues(parsed.error));
  return parsed.data;
}

/** A store with the methods named (`get` and `put`, plus `list` for a sharded group). */
export const storeField = (methods: readonly string[], error: string) =>
  z.custom<object>(
    (s) =>
      typeof s === "object" &&
      s !== null &&
      methods.every((k) => typeof (s as Record<string, unknown>)[k] === "function"),
    { error },
  );

/** A follower's own fields, an Elector's and a session's alike: its poll pace and its lane. */
export const followerFields = {
  pollMs: ms("the follower poll interval").positive({ error: "expected more than 0 ms" }).default(DEFAULT_POLL_MS),
  lane: z
    .custom<object>(
      (l) => typeof l === "object" && l !== null && typeof (l as { admit?: unknown }).admit === "function",
      {
        error: "expected a Lane (an object with admit)",
      },
    )
    .optional(),
};

// Strict: a misspelt option (leaseMS) is an error, not a silently ignored default.
const fieldsSchema = z.strictObject(
  {
    store: storeField(["get", "put"], "expected a LeaseStore (an object with get and put)"),
    name: nameSchema,
    identity: holderSchema.optional(),
    ...timingFields,
    graceMs: ms("the stop grace period").optional(),
    ...followerFields,
    metadata: metadataSchema.default({}),
    session: z
      .boolean({ error: "expected true (bound to the process session) or false (renews its own record)" })
      .default(true),
  },
  { error: "expected an options object with store and name" },
);

/** The timing every campaigner resolves alike (the elector, the sharded elector). */
export interface ResolvedTiming {
  leaseMs: number;
  renewMs: number;
  retryMs: number;
  safetyMs: number;
  jitter: number;
  maxSkewMs: number;
  callTimeoutMs: number;
  graceMs: number;
}

/**
 * Fills in the timing defaults (client-go's proportions: safety a tenth, renew a third, retry
 * 2 s of 15; a store call may take a renewal interval but at most half of what is left of the
 * window when a renewal is due, ./renewal-schedule.ts; a stop may take a lease) and checks the
 * relations between them and the store's declared limits, adding to `issues`. `holder` names who
 * must renew before its safe window closes, for the message.
 */
export function resolveTiming(
  o: {
    store: object;
    leaseMs: number;
    renewMs?: number | undefined;
    retryMs?: number | undefined;
    safetyMs?: number | undefined;
    jitter: number;
    maxSkewMs: number;
    callTimeoutMs?: number | undefined;
    graceMs?: number | undefined;
  },
  issues: FieldIssue[],
  holder: string,
): ResolvedTiming {
  const safetyMs = o.safetyMs ?? Math.max(1, Math.floor(o.leaseMs / 10));
  const renewMs = o.renewMs ?? Math.floor(o.leaseMs / 3);
  const retryMs = o.retryMs ?? Math.max(1, Math.floor(o.leaseMs / 7.5));
  if (safetyMs >= o.leaseMs) {
    issues.push({ path: "safetyMs", message: `expected less than leaseMs (${o.leaseMs}), got ${safetyMs}` });
  }
  if (renewMs >= o.leaseMs - safetyMs) {
    issues.push({
      path: "renewMs",
      message: `expected less than leaseMs - safetyMs (${o.leaseMs} - ${safetyMs} = ${o.leaseMs - safetyMs}), got ${renewMs}: ${holder} must renew before its safe window closes`,
    });
  }
  if (retryMs > o.leaseMs) {
    issues.push({ path: "retryMs", message: `expected at most leaseMs (${o.leaseMs}), got ${retryMs}` });
  }
  issues.push(...storeLimitIssues((o.store as LeaseStore).limits, { renewMs }));
  return {
    leaseMs: o.leaseMs,
    renewMs,
    retryMs,
    safetyMs,
    jitter: o.jitter,
    maxSkewMs: o.maxSkewMs,
    // Two whole renewal attempts fit in what is left of the window (./renewal-schedule.ts).
    callTimeoutMs: o.callTimeoutMs ?? defaultCallTimeoutMs(o.leaseMs, safetyMs, renewMs),
    graceMs: o.graceMs ?? o.leaseMs,
  };
}

export interface ResolvedElectorOptions extends ResolvedTiming {
  name: string;
  pollMs: number;
  identity: string | undefined;
  metadata: Record<string, string>;
  /** Bound to the process session (src/bound/process-elector.ts), or renewing its own record. */
  session: boolean;
}

export function resolveElectorOptions(options: unknown): ResolvedElectorOptions {
  const o = parseClassOptions(options, fieldsSchema, "elector options", "runAsLeader", "Elector");
  const issues: FieldIssue[] = [];
  const timing = resolveTiming(o, issues, "the leader");
  if (issues.length > 0) throw new LeaseValidationError("elector options", issues);
  return {
    name: o.name,
    identity: o.identity,
    ...timing,
    pollMs: o.pollMs,
    metadata: o.metadata,
    session: o.session,
  };
}

/**
 * `runAsLeader`'s and `runSharded`'s own arguments, checked before anything campaigns: a bad `fn`
 * would otherwise be found only once elected (the lease taken, then released, for nothing).
 */
export function validateCallbackArguments(what: string, options: unknown, fn: unknown): void {
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
  if (issues.length > 0) throw new LeaseValidationError(`${what} arguments`, issues);
}
