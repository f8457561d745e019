/**
 * The numeric options of `createApp` and the one place their bounds live: `createApp` checks a
 * library caller's values here, and the server configuration (src/api/config/policy.ts) reads the
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
  // A store call's deadline (src/api/store-deadline.ts): under the clients' call timeouts (the
  // elector's default is about a quarter of its lease), so a cut link is a 503 while the client
  // still waits; 10 ms is below any store's round trip, a minute is no deadline at all.
  storeTimeoutMs: { min: 10, max: 60_000, default: 2000, unit: MS },
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

/**
 * Admission (src/api/admission.ts): requests in flight, the share of them reserved for current
 * holders' renewals, and the event-loop lateness past which only those are served. inFlight: 2
 * leaves one request for each share; past a million the bound bounds nothing. reservedInFlight's
 * `default` is what a quarter of inFlight's default gives: unset, it is a quarter of inFlight (at
 * least 1), and it must stay below inFlight. lateMs: under 10 ms a timer's own jitter would shed;
 * past a minute nothing is late. Its default, 1000 ms: a full `npm test` on a busy 2-core machine
 * (load average 34) measured 270-330 ms of lateness in servers that were keeping up, and a server a
 * whole second late is putting 1 s renewals at risk; set it lower for short leases.
 */
export const ADMISSION_BOUNDS = {
  inFlight: { min: 2, max: 1_000_000, default: 512, unit: "a whole number of requests" },
  reservedInFlight: { min: 1, max: 999_999, default: 128, unit: "a whole number of requests" },
  lateMs: { min: 10, max: 60_000, default: 1000, unit: MS },
} as const satisfies Record<string, Bounds>;
export type AdmissionName = keyof typeof ADMISSION_BOUNDS;

/** reservedInFlight when unset: a quarter of inFlight, at least 1. */
export const defaultReserved = (inFlight: number) => Math.max(1, Math.floor(inFlight / 4));

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
  storeTimeoutMs: optional(APP_OPTION_BOUNDS.storeTimeoutMs),
  limits: z
    .looseObject(Object.fromEntries(LIMIT_NAMES.map((name) => [name, optional(APP_OPTION_BOUNDS[name])])))
    .optional(),
  allowedHosts: z.literal("loopback").optional(),
  admission: z
    .looseObject({
      inFlight: optional(ADMISSION_BOUNDS.inFlight),
      reservedInFlight: optional(ADMISSION_BOUNDS.reservedInFlight),
      lateMs: optional(ADMISSION_BOUNDS.lateMs),
      lateness: z.custom<() => number>((f) => typeof f === "function", { error: "expected a function" }).optional(),
    })
    .superRefine((a, ctx) => {
      const inFlight = (a.inFlight as number | undefined) ?? ADMISSION_BOUNDS.inFlight.default;
      const reserved = a.reservedInFlight as number | undefined;
      if (typeof reserved === "number" && reserved >= inFlight) {
        ctx.addIssue({
          code: "custom",
          path: ["reservedInFlight"],
          message: `expected fewer than inFlight (${inFlight}) requests, got ${reserved}: the rest serve everything else`,
        });
      }
    })
    .optional(),
});

export type ResolvedAppOptions = {
  maxSkewMs: number;
  watchPollMs: number;
  heartbeatMs: number;
  storeTimeoutMs: number;
  /** Admission's bounds; undefined: every request is admitted (createApp without `admission`). */
  admission: Record<AdmissionName, number> | undefined;
} & Record<LimitName, number>;

/** Admission's bounds with their defaults filled in (reservedInFlight: a quarter of inFlight). */
export function resolveAdmission(a: { [K in AdmissionName]?: number | undefined }): Record<AdmissionName, number> {
  const inFlight = a.inFlight ?? ADMISSION_BOUNDS.inFlight.default;
  return {
    inFlight,
    reservedInFlight: a.reservedInFlight ?? defaultReserved(inFlight),
    lateMs: a.lateMs ?? ADMISSION_BOUNDS.lateMs.default,
  };
}

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
    storeTimeoutMs?: number;
    limits?: Partial<Record<LimitName, number>>;
    admission?: Partial<Record<AdmissionName, number>>;
  };
  const b = APP_OPTION_BOUNDS;
  const limits = Object.fromEntries(LIMIT_NAMES.map((name) => [name, o.limits?.[name] ?? b[name].default]));
  return {
    maxSkewMs: o.maxSkewMs ?? b.maxSkewMs.default,
    watchPollMs: o.watchPollMs ?? b.watchPollMs.default,
    heartbeatMs: o.heartbeatMs ?? b.heartbeatMs.default,
    storeTimeoutMs: o.storeTimeoutMs ?? b.storeTimeoutMs.default,
    admission: o.admission ? resolveAdmission(o.admission) : undefined,
    ...(limits as Record<LimitName, number>),
  };
}
