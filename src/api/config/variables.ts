/**
 * The API server's environment schema: every variable a server entry reads, each with the zod field
 * that reads it (./fields.ts), and the names leasehold knows without reading them (so a typo of one
 * is warned about). The variables the backends take defaults from are their declarations' own
 * (`Backend.env`). Which entry reads which variable is ./policy.ts; the README's variable table
 * documents each (test/config-docs.test.ts holds it to this file). Runtime-neutral.
 */
import { z } from "zod";
import { BACKENDS } from "../../open-store.js";
import { CONSOLE_BOUNDS } from "../console/options.js";
import {
  ADMISSION_BOUNDS,
  type AdmissionName,
  APP_OPTION_BOUNDS,
  type Bounds,
  LIMIT_NAMES,
  type LimitName,
} from "../options.js";
import {
  type Env,
  envChoice,
  envField,
  envMatching,
  envSqlitePath,
  envStoreUrl,
  envTokens,
  envWholeNumber,
} from "./fields.js";

export const DEFAULT_PORT = 8787;
export const DEFAULT_HOST = "127.0.0.1";
const PORT_BOUNDS: Bounds = { min: 0, max: 65_535, default: DEFAULT_PORT, unit: "a port number" };

// ---------------------------------------------------------------------------------------------
// Bounds (docs/security.md "Bounds"): what one caller can make the server hold. createApp's
// limits, each a variable; and the Node listener's own, which Lambda and Workers leave to the
// platform's front end (API Gateway, Cloudflare) and refuse there.

/** LEASEHOLD_<NAME> of each createApp limit. */
export const LIMIT_VARIABLES = {
  bodyBytes: "LEASEHOLD_BODY_BYTES",
  listLimit: "LEASEHOLD_LIST_LIMIT",
  watchStreams: "LEASEHOLD_WATCH_STREAMS",
  watchStreamsPerToken: "LEASEHOLD_WATCH_STREAMS_PER_TOKEN",
  recordsPerPrefix: "LEASEHOLD_RECORDS_PER_PREFIX",
  createsPerMinute: "LEASEHOLD_CREATES_PER_MINUTE",
  bucketWritesPerHeartbeat: "LEASEHOLD_BUCKET_WRITES_PER_HEARTBEAT",
} as const satisfies Record<LimitName, string>;

/**
 * The Node listener's bounds: a client gets `headersTimeoutMs` to send its headers and
 * `requestTimeoutMs` its whole request (then 408), an idle keep-alive connection is closed after
 * `keepAliveTimeoutMs`, and past `maxConnections` open connections a new one is answered 503.
 * A watch stream is a response, not a request: these never cut one.
 */
export const LISTENER_BOUNDS = {
  headersTimeoutMs: { min: 100, max: 120_000, default: 5000, unit: "a whole number of milliseconds" },
  requestTimeoutMs: { min: 100, max: 600_000, default: 10_000, unit: "a whole number of milliseconds" },
  keepAliveTimeoutMs: { min: 100, max: 600_000, default: 5000, unit: "a whole number of milliseconds" },
  maxConnections: { min: 1, max: 1_000_000, default: 1024, unit: "a whole number of connections" },
  // A quarter of maxConnections' default: one noisy host (or one proxy) never takes the whole server.
  maxConnectionsPerAddress: { min: 1, max: 1_000_000, default: 256, unit: "a whole number of connections" },
} as const satisfies Record<string, Bounds>;
export type ListenerLimits = { [K in keyof typeof LISTENER_BOUNDS]: number };

export const LISTENER_VARIABLES = {
  headersTimeoutMs: "LEASEHOLD_HEADERS_TIMEOUT_MS",
  requestTimeoutMs: "LEASEHOLD_REQUEST_TIMEOUT_MS",
  keepAliveTimeoutMs: "LEASEHOLD_KEEP_ALIVE_TIMEOUT_MS",
  maxConnections: "LEASEHOLD_MAX_CONNECTIONS",
  maxConnectionsPerAddress: "LEASEHOLD_MAX_CONNECTIONS_PER_ADDRESS",
} as const satisfies Record<keyof ListenerLimits, string>;

const boundFields = {
  ...Object.fromEntries(LIMIT_NAMES.map((n) => [LIMIT_VARIABLES[n], envWholeNumber(APP_OPTION_BOUNDS[n])])),
  ...Object.fromEntries(
    (Object.keys(LISTENER_BOUNDS) as Array<keyof ListenerLimits>).map((n) => [
      LISTENER_VARIABLES[n],
      envWholeNumber(LISTENER_BOUNDS[n]),
    ]),
  ),
} as Record<
  (typeof LIMIT_VARIABLES)[LimitName] | (typeof LISTENER_VARIABLES)[keyof ListenerLimits],
  ReturnType<typeof envWholeNumber>
>;

/**
 * Admission (src/api/admission.ts): requests in flight, the share reserved for current holders'
 * renewals, and the lateness past which only those are served. Per instance, like the listener's
 * bounds, and meaningless where one instance serves one request at a time (Lambda) or where the
 * platform starts isolates as load comes (Workers): refused there.
 */
export const ADMISSION_VARIABLES = {
  inFlight: "LEASEHOLD_IN_FLIGHT",
  reservedInFlight: "LEASEHOLD_RESERVED_IN_FLIGHT",
  lateMs: "LEASEHOLD_LATE_MS",
} as const satisfies Record<AdmissionName, string>;

/** Every variable the server entries read, with its field schema. */
export const serverFields = {
  PORT: envWholeNumber(PORT_BOUNDS),
  HOST: envMatching(/^[A-Za-z0-9._:%-]{1,253}$/, "a host name or IP address to bind, such as 127.0.0.1 or 0.0.0.0"),
  LEASEHOLD_STORE: envStoreUrl,
  LEASEHOLD_DB: envSqlitePath,
  LEASEHOLD_TOKENS: envTokens,
  LEASEHOLD_INSECURE_NO_AUTH: envChoice(["1", "0"], " (1 turns auth off)"),
  LEASEHOLD_MAX_SKEW_MS: envWholeNumber(APP_OPTION_BOUNDS.maxSkewMs),
  LEASEHOLD_WATCH_POLL_MS: envWholeNumber(APP_OPTION_BOUNDS.watchPollMs),
  LEASEHOLD_HEARTBEAT_MS: envWholeNumber(APP_OPTION_BOUNDS.heartbeatMs),
  LEASEHOLD_STORE_TIMEOUT_MS: envWholeNumber(APP_OPTION_BOUNDS.storeTimeoutMs),
  LEASEHOLD_LOG: envChoice(["text", "json"]),
  // The console (src/api/console/, docs/console.md): the page at /ui and the change log behind it.
  LEASEHOLD_CONSOLE: envChoice(["1", "0"], " (0 turns the console at /ui off)"),
  LEASEHOLD_HISTORY_TERMS: envWholeNumber(CONSOLE_BOUNDS.historyTerms),
  LEASEHOLD_HISTORY_LEASES: envWholeNumber(CONSOLE_BOUNDS.historyLeases),
  ...boundFields,
  LEASEHOLD_IN_FLIGHT: envWholeNumber(ADMISSION_BOUNDS.inFlight),
  LEASEHOLD_RESERVED_IN_FLIGHT: envWholeNumber(ADMISSION_BOUNDS.reservedInFlight),
  LEASEHOLD_LATE_MS: envWholeNumber(ADMISSION_BOUNDS.lateMs),
};

/**
 * The variables the backends take defaults from (region, project, token, keys): each backend
 * declares its own, with the rule its value keeps (`Backend.env`). Every entry passes them on to
 * openStore as they are.
 */
export const storeFields: Record<string, ReturnType<typeof envField<string>>> = {};
for (const backend of BACKENDS) {
  for (const [name, rule] of Object.entries(backend.env ?? {})) {
    storeFields[name] ??= envField((text) => {
      const result = rule.safeParse(text);
      if (result.success) return { ok: true, value: result.data };
      return { ok: false, message: `${result.error.issues[0]?.message ?? "invalid"}, got ${JSON.stringify(text)}` };
    });
  }
}

/** A server setting, or a variable a backend reads. */
export type ServerVariable = string;
export const SERVER_VARIABLES: readonly ServerVariable[] = [...Object.keys(serverFields), ...Object.keys(storeFields)];

/** The one schema: an environment object in, typed values out (other names pass through untouched). */
export const serverEnvSchema = z.looseObject(serverFields);
/** The backends' variables, read with their own rules. */
export const storeEnvSchema = z.looseObject(storeFields);

/** LEASEHOLD_* names that are not server settings but are known (so no typo warning): */
export const OTHER_LEASEHOLD_VARIABLES = [
  // set by `leasehold run` for its command
  "LEASEHOLD_LEASE",
  "LEASEHOLD_TERM",
  "LEASEHOLD_IDENTITY",
  // read by infra/aws at synth time
  "LEASEHOLD_AUTH",
  "LEASEHOLD_STORE_KIND",
  "LEASEHOLD_TTL_ATTRIBUTE",
  "LEASEHOLD_LAMBDA_NODE",
  "LEASEHOLD_LAMBDA_DIR",
  "LEASEHOLD_STACK_NAME",
];

/** A warning for each LEASEHOLD_* name in `env` that leasehold does not know, naming the nearest known one. */
export function unknownVariableWarnings(env: Env): string[] {
  const known = new Set<string>([...SERVER_VARIABLES, ...OTHER_LEASEHOLD_VARIABLES]);
  const warnings: string[] = [];
  for (const name of Object.keys(env)) {
    if (!name.startsWith("LEASEHOLD_") || known.has(name)) continue;
    const near = [...known].find((k) => editDistance(k, name) <= 3);
    warnings.push(`${name} is not a leasehold variable and is ignored${near ? ` (did you mean ${near}?)` : ""}`);
  }
  return warnings;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length]!;
}
