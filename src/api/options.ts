/**
 * The numeric options of `createApp` and the one place their bounds live: `createApp` checks a
 * library caller's values here, and the server configuration (src/runtime/config.ts) reads the
 * environment variables against the same bounds. A value outside them is refused with a
 * `LeaseValidationError` naming the option, before anything is built.
 *
 * Why bounds at all: NaN or a negative skew makes `renewedAt + leaseMs + maxSkewMs` never (or
 * always) pass, so a lease is never free (or always); a zero poll or heartbeat interval spins;
 * delays past 2^31 - 1 ms overflow timers and fire at once.
 */
import { z } from "zod";
import { validate } from "../lease.js";

export interface Bounds {
  min: number;
  max: number;
  /** What createApp uses when the option is not given. */
  default: number;
  /** What the number counts, for messages: "a whole number of milliseconds". */
  unit: string;
}

const MS = "a whole number of milliseconds";

/**
 * maxSkewMs: 0 is fine for one instance; past a minute the clocks are not synchronised at all,
 * and every takeover waits that long. watchPollMs and heartbeatMs: an hour is "practically never"
 * (a watched lease costs one read per interval), 10 ms the fastest that is not a busy loop.
 */
export const APP_OPTION_BOUNDS = {
  maxSkewMs: { min: 0, max: 60_000, default: 1000, unit: MS },
  watchPollMs: { min: 10, max: 3_600_000, default: 1000, unit: MS },
  heartbeatMs: { min: 10, max: 3_600_000, default: 15_000, unit: MS },
  bodyBytes: { min: 1024, max: 1_048_576, default: 4096, unit: "a whole number of bytes" },
  listLimit: { min: 1, max: 10_000, default: 1000, unit: "a whole number of leases" },
  // What one caller can make this server hold (src/api/limits.ts, docs/security.md "Bounds"):
  // defaults a small deployment never meets, low enough that one token cannot exhaust a server.
  watchStreams: { min: 1, max: 1_000_000, default: 1000, unit: "a whole number of streams" },
  watchStreamsPerToken: { min: 1, max: 1_000_000, default: 100, unit: "a whole number of streams" },
  recordsPerPrefix: { min: 1, max: 100_000_000, default: 10_000, unit: "a whole number of records" },
  createsPerMinute: { min: 1, max: 1_000_000, default: 600, unit: "a whole number of records" },
  bucketWritesPerHeartbeat: { min: 1, max: 4096, default: 64, unit: "a whole number of writes" },
} as const satisfies Record<string, Bounds>;

/** The bounds of `limits`, each a createApp option and a LEASEHOLD_* variable. */
export const LIMIT_NAMES = [
  "bodyBytes",
  "listLimit",
  "watchStreams",
  "watchStreamsPerToken",
  "recordsPerPrefix",
  "createsPerMinute",
  "bucketWritesPerHeartbeat",
] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];

/** "expected a whole number of milliseconds 0-60000": the same words for options and variables. */
export function expectation(bounds: Bounds): string {
  return `expected ${bounds.unit} ${bounds.min}-${bounds.max}`;
}

/** A number option within `bounds`, refused with the words of `expectation`. */
export function bounded(bounds: Bounds) {
  return z.unknown().superRefine((value, ctx) => {
    if (typeof value !== "number" || !Number.isInteger(value) || value < bounds.min || value > bounds.max) {
      ctx.addIssue({ code: "custom", message: `${expectation(bounds)}, got ${written(value)}` });
    }
  });
}

function written(value: unknown): string {
  if (typeof value === "number") return String(value); // NaN, Infinity, -1, 1.5 as written
  if (typeof value === "string") return JSON.stringify(value);
  return value === null ? "null" : typeof value;
}

const optional = (bounds: Bounds) => bounded(bounds).optional();

// Loose objects: only the options named here are checked, so an option added to AppOptions
// elsewhere is not refused by this module.
const appOptionsSchema = z.looseObject({
  store: z.custom<unknown>(
    (store) =>
      typeof store === "object" &&
      store !== null &&
      typeof (store as { get?: unknown }).get === "function" &&
      typeof (store as { put?: unknown }).put === "function",
    { error: "expected a LeaseStore (an object with get and put)" },
  ),
  maxSkewMs: optional(APP_OPTION_BOUNDS.maxSkewMs),
  watchPollMs: optional(APP_OPTION_BOUNDS.watchPollMs),
  heartbeatMs: optional(APP_OPTION_BOUNDS.heartbeatMs),
  limits: z
    .looseObject(Object.fromEntries(LIMIT_NAMES.map((name) => [name, optional(APP_OPTION_BOUNDS[name])])))
    .optional(),
  allowedHosts: z.literal("loopback").optional(),
});

export type ResolvedAppOptions = {
  maxSkewMs: number;
  watchPollMs: number;
  heartbeatMs: number;
} & Record<LimitName, number>;

/**
 * Checks the options and fills in the defaults (the bounds' own, so the start-up line and the
 * app never disagree). Throws `LeaseValidationError("API options", ...)` naming each option that
 * is out of bounds.
 */
export function resolveAppOptions(options: unknown): ResolvedAppOptions {
  const o = validate("API options", appOptionsSchema, options) as {
    maxSkewMs?: number;
    watchPollMs?: number;
    heartbeatMs?: number;
    limits?: Partial<Record<LimitName, number>>;
  };
  const b = APP_OPTION_BOUNDS;
  const limits = Object.fromEntries(LIMIT_NAMES.map((name) => [name, o.limits?.[name] ?? b[name].default]));
  return {
    maxSkewMs: o.maxSkewMs ?? b.maxSkewMs.default,
    watchPollMs: o.watchPollMs ?? b.watchPollMs.default,
    heartbeatMs: o.heartbeatMs ?? b.heartbeatMs.default,
    ...(limits as Record<LimitName, number>),
  };
}
