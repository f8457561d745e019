/**
 * The API server's configuration, read the same way by every entry: `npm start`
 * (src/runtime/node.ts), `leasehold serve` (src/cli/serve.ts), the Lambda handler
 * (src/runtime/lambda.ts), the Worker (src/runtime/worker.ts), and infra/aws, which checks at synth
 * time the environment it gives the function. One zod schema reads an environment object
 * (process.env, a function's environment, a Worker's bindings) into the options those entries wire
 * up; the README's variable table documents it variable by variable.
 *
 * Rules every entry shares:
 * - Unset and "" mean the same (an empty `FOO=` line in an env file is common).
 * - A bad value refuses to start with the variable's name, the value (never a secret's) and what
 *   was expected; nothing is guessed (a number binding of a Worker counts as its digits).
 * - A variable an entry cannot honour (PORT on Lambda, LEASEHOLD_DB on the Worker, ...) is refused
 *   there with the reason. No platform sets these names itself, so refusing never trips over the
 *   platform's own variables.
 * - LEASEHOLD_TOKENS together with LEASEHOLD_INSECURE_NO_AUTH=1 is a contradiction and refused, as
 *   are LEASEHOLD_STORE together with LEASEHOLD_DB.
 * - Unknown LEASEHOLD_* names are reported as warnings (a typo must not silently mean "default").
 *
 * Runtime-neutral: no Node API here; it runs inside the Worker and the Lambda bundle too.
 */

import { z } from "zod";
import type { ApiLimits } from "../api/app-options.js";
import { CONSOLE_BOUNDS, type ResolvedConsoleOptions } from "../api/console/options.js";
import type { LogFormat } from "../api/log.js";
import {
  ADMISSION_BOUNDS,
  type AdmissionName,
  APP_OPTION_BOUNDS,
  type Bounds,
  LIMIT_NAMES,
  type LimitName,
  resolveAdmission,
} from "../api/options.js";
import { type FieldIssue, isLeaseValidationError, LeaseValidationError } from "../errors.js";
import { chooseStoreUrl, parseStoreUrl, refusedOn, type StoreUrl } from "../open-store.js";
import { type AuthMode, describeAuth, resolveAuth } from "./auth-mode.js";
import {
  type Env,
  envChoice,
  envMatching,
  envSqlitePath,
  envStoreUrl,
  envText,
  envTokens,
  envWholeNumber,
} from "./env-fields.js";
import { redactUrl } from "./redact.js";

export { type AuthMode, authConfig, describeAuth, isLoopback, resolveAuth } from "./auth-mode.js";

/** The entries that read the server configuration. */
export type Entry = "node" | "serve" | "lambda" | "worker";

export const ENTRY_NAMES: Record<Entry, string> = {
  node: "npm start",
  serve: "leasehold serve",
  lambda: "the Lambda handler",
  worker: "the Worker",
};

export { DEFAULT_DB } from "../open-store.js";
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
} as const satisfies Record<string, Bounds>;
export type ListenerLimits = { [K in keyof typeof LISTENER_BOUNDS]: number };

export const LISTENER_VARIABLES = {
  headersTimeoutMs: "LEASEHOLD_HEADERS_TIMEOUT_MS",
  requestTimeoutMs: "LEASEHOLD_REQUEST_TIMEOUT_MS",
  keepAliveTimeoutMs: "LEASEHOLD_KEEP_ALIVE_TIMEOUT_MS",
  maxConnections: "LEASEHOLD_MAX_CONNECTIONS",
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

const PER_INSTANCE_ADMISSION = {
  lambda:
    "a Lambda instance serves one request at a time, so a bound on requests in flight per instance, or on its lateness, never holds anything back: bound requests with the function's reserved concurrency",
  worker:
    "Cloudflare starts isolates as load comes and bounds each one's CPU time itself, so a bound per isolate holds nothing back: use Cloudflare's rate limiting",
};

const NO_NODE_LISTENER = {
  lambda: "API Gateway or the Function URL holds the connections: their own limits apply",
  worker: "Cloudflare holds the connections: its own limits apply",
};

// ---------------------------------------------------------------------------------------------
// The variables.

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
  LEASEHOLD_LOG: envChoice(["text", "json"]),
  // The console (src/api/console/, docs/console.md): the page at /ui and the change log behind it.
  LEASEHOLD_CONSOLE: envChoice(["1", "0"], " (0 turns the console at /ui off)"),
  LEASEHOLD_HISTORY_TERMS: envWholeNumber(CONSOLE_BOUNDS.historyTerms),
  LEASEHOLD_HISTORY_LEASES: envWholeNumber(CONSOLE_BOUNDS.historyLeases),
  ...boundFields,
  LEASEHOLD_IN_FLIGHT: envWholeNumber(ADMISSION_BOUNDS.inFlight),
  LEASEHOLD_RESERVED_IN_FLIGHT: envWholeNumber(ADMISSION_BOUNDS.reservedInFlight),
  LEASEHOLD_LATE_MS: envWholeNumber(ADMISSION_BOUNDS.lateMs),
  /** Defaults the store URL takes from the environment (see openStore). */
  LEASEHOLD_TOKEN: envText,
  AWS_REGION: envMatching(/^[a-z0-9-]{1,64}$/, "an AWS region such as eu-west-1"),
  AWS_DEFAULT_REGION: envMatching(/^[a-z0-9-]{1,64}$/, "an AWS region such as eu-west-1"),
  GOOGLE_CLOUD_PROJECT: envText,
  /** The azblob:// store's key, in this order of preference (a secret). */
  AZURE_STORAGE_CONNECTION_STRING: envText,
  AZURE_STORAGE_KEY: envText,
  AZURE_STORAGE_SAS_TOKEN: envText,
  /** The postgres:// store's password when its URL names none (a secret). */
  PGPASSWORD: envText,
  /** Read by leasehold on the Worker only (no IAM role there); on Node and Lambda the AWS SDK reads them. */
  AWS_ACCESS_KEY_ID: envText,
  AWS_SECRET_ACCESS_KEY: envText,
  AWS_SESSION_TOKEN: envText,
};

export type ServerVariable = keyof typeof serverFields;
export const SERVER_VARIABLES = Object.keys(serverFields) as ServerVariable[];

/** The one schema: an environment object in, typed values out (other names pass through untouched). */
export const serverEnvSchema = z.looseObject(serverFields);

const NO_LISTENER: Partial<Record<Entry, string>> = {
  lambda: "a Lambda function does not listen on a port: API Gateway or its Function URL invokes it",
  worker: "a Worker does not listen on a port: Cloudflare routes requests to it",
};
/** Why the per-instance stream bounds mean nothing on Lambda. */
const ONE_REQUEST_PER_INSTANCE =
  "a Lambda instance serves one request at a time, so it holds at most one stream: bound streams with the function's reserved concurrency";

/** Where a variable cannot work, and why: setting it there is refused with this reason. */
export const NOT_READ_BY: Partial<Record<ServerVariable, Partial<Record<Entry, string>>>> = {
  PORT: NO_LISTENER,
  HOST: NO_LISTENER,
  LEASEHOLD_DB: {
    lambda:
      "each Lambda instance would have its own SQLite file, so two instances could elect two leaders; use LEASEHOLD_STORE=dynamodb://TABLE",
    worker: "a Worker has no filesystem; leases live in Durable Objects (LEASES) or in DynamoDB (LEASEHOLD_STORE)",
  },
  LEASEHOLD_WATCH_STREAMS: { lambda: ONE_REQUEST_PER_INSTANCE },
  LEASEHOLD_WATCH_STREAMS_PER_TOKEN: { lambda: ONE_REQUEST_PER_INSTANCE },
  LEASEHOLD_CONSOLE: {
    lambda:
      "every console view holds watch streams, and each stream holds a Lambda instance for up to 15 minutes of billed duration: serve the console from a Node or Workers deployment of the same store",
  },
  ...Object.fromEntries(Object.values(LISTENER_VARIABLES).map((name) => [name, NO_NODE_LISTENER])),
  ...Object.fromEntries(Object.values(ADMISSION_VARIABLES).map((name) => [name, PER_INSTANCE_ADMISSION])),
  LEASEHOLD_TOKEN: {
    worker: "it is the bearer token of an http(s):// store, and the Worker serves Durable Objects or DynamoDB only",
  },
  ...Object.fromEntries(
    (["AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN"] as const).map((name) => [
      name,
      { worker: "it is the key of an azblob:// store, and the Worker serves Durable Objects or DynamoDB only" },
    ]),
  ),
  PGPASSWORD: {
    worker: "it is the password of a postgres:// store, and the Worker serves Durable Objects or DynamoDB only",
  },
};

/** LEASEHOLD_* names that are not server settings but are known (so no typo warning): */
const OTHER_LEASEHOLD_VARIABLES = [
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

// ---------------------------------------------------------------------------------------------
// What the entries get.

export type StoreChoice =
  /** `from`: where the URL came from, for the start-up line (LEASEHOLD_STORE, --store, LEASEHOLD_DB, default). */
  | { kind: "url"; url: string; spec: StoreUrl; from: string }
  /** The Worker without LEASEHOLD_STORE: its LEASES Durable Object namespace. */
  | { kind: "durable-objects" };

export interface ServerConfig {
  entry: Entry;
  /** `npm start` and `leasehold serve` only. */
  listen?: { host: string; port: number };
  store: StoreChoice;
  auth: AuthMode;
  /** createApp's options, with their defaults filled in, for the ones this entry uses. */
  app: { maxSkewMs: number; watchPollMs: number; heartbeatMs: number; limits: ApiLimits };
  /** `npm start` and `leasehold serve`: admission's bounds (createApp's `admission`, with a lateness probe). */
  admission?: Record<AdmissionName, number>;
  /** LEASEHOLD_CONSOLE and LEASEHOLD_HISTORY_*: createApp's `console` (off on Lambda: see NOT_READ_BY). */
  console: ResolvedConsoleOptions;
  /** `npm start` and `leasehold serve`: the Node listener's bounds. */
  listener?: ListenerLimits;
  /** LEASEHOLD_LOG: the server log's format (src/api/log.ts). */
  logFormat: LogFormat;
  /** What openStore may take defaults from (region, project, the HTTP store's token). */
  storeEnv: Record<string, string>;
  /** The Worker on DynamoDB: keys from its secrets (a Worker has no IAM role). */
  awsCredentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Things that do not stop the server but that its operator should read. */
  warnings: string[];
}

/** `leasehold serve`'s flags: each overrides its variable. */
export interface ServeFlags {
  store?: string;
  host?: string;
  port?: number;
  insecureNoAuth?: boolean;
}

/** How to turn auth off on each entry, for the message refusing to run without tokens. */
const INSECURE_HINT: Record<Entry, string> = {
  node: "LEASEHOLD_INSECURE_NO_AUTH=1 if you really mean it",
  serve: "--insecure-no-auth (or LEASEHOLD_INSECURE_NO_AUTH=1) if you really mean it",
  lambda: "LEASEHOLD_INSECURE_NO_AUTH=1 if you really mean it (behind IAM auth only)",
  worker: "LEASEHOLD_INSECURE_NO_AUTH=1 if you really mean it (throwaway deployments only)",
};

const FLAG_OF = {
  LEASEHOLD_STORE: "--store",
  HOST: "--host",
  PORT: "--port",
  LEASEHOLD_INSECURE_NO_AUTH: "--insecure-no-auth",
} as const;

/**
 * Reads the server configuration of `entry` from `env`. Throws `LeaseValidationError`
 * ("invalid server configuration: VARIABLE: ...") listing every problem; returns the options
 * otherwise. `flags` (leasehold serve only) override their variables.
 */
export function readServerConfig(env: Env, entry: Entry, flags: ServeFlags = {}): ServerConfig {
  const { merged, shown } = applyFlags(env, flags);
  const fail = (issues: FieldIssue[]): never => {
    throw new LeaseValidationError(
      "server configuration",
      issues.map((i) => ({ ...i, path: shown(i.path) })),
    );
  };

  const refused: FieldIssue[] = [];
  for (const [name, reasons] of Object.entries(NOT_READ_BY) as [ServerVariable, Partial<Record<Entry, string>>][]) {
    const why = reasons[entry];
    if (why !== undefined && isSet(merged[name])) {
      refused.push({ path: name, message: `not read by ${ENTRY_NAMES[entry]}: ${why}; unset it` });
    }
  }
  const parsed = serverEnvSchema.safeParse(merged);
  const fieldIssues = parsed.success
    ? []
    : parsed.error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
  // A refused variable's own parse error adds nothing: where it is not read, its value is moot.
  const issues = [...refused, ...fieldIssues.filter((i) => !refused.some((r) => r.path === i.path))];
  if (issues.length > 0 || !parsed.success) return fail(issues);
  const v = parsed.data;

  const problems: FieldIssue[] = [];
  const warnings = unknownVariableWarnings(env);

  const listen =
    entry === "node" || entry === "serve" ? { host: v.HOST ?? DEFAULT_HOST, port: v.PORT ?? DEFAULT_PORT } : undefined;

  const store = chooseStore(v, entry, flags, problems, warnings);
  const auth = resolveAuth(
    {
      tokens: v.LEASEHOLD_TOKENS,
      insecure: v.LEASEHOLD_INSECURE_NO_AUTH === "1",
      host: listen?.host,
      server: ENTRY_NAMES[entry],
    },
    {
      tokens: "LEASEHOLD_TOKENS",
      insecure: flags.insecureNoAuth ? "--insecure-no-auth" : "LEASEHOLD_INSECURE_NO_AUTH=1",
      insecureHint: INSECURE_HINT[entry],
    },
  );
  if ("issue" in auth) problems.push(auth.issue);

  const storeEnv: Record<string, string> = {};
  for (const name of [
    "LEASEHOLD_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "GOOGLE_CLOUD_PROJECT",
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "PGPASSWORD",
  ] as const) {
    const value = v[name];
    if (value !== undefined) storeEnv[name] = value;
  }

  let awsCredentials: ServerConfig["awsCredentials"];
  if (store?.kind === "url" && store.spec.kind === "dynamodb") {
    if (!store.spec.region && !v.AWS_REGION && !v.AWS_DEFAULT_REGION) {
      problems.push({
        path: "LEASEHOLD_STORE",
        message: "dynamodb:// needs ?region=... in the URL, or AWS_REGION (or AWS_DEFAULT_REGION)",
      });
    }
    if (entry === "worker") {
      if (!v.AWS_ACCESS_KEY_ID || !v.AWS_SECRET_ACCESS_KEY) {
        problems.push({
          path: v.AWS_ACCESS_KEY_ID ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID",
          message:
            "dynamodb:// on a Worker needs the secrets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (a Worker has no IAM role)",
        });
      } else {
        awsCredentials = {
          accessKeyId: v.AWS_ACCESS_KEY_ID,
          secretAccessKey: v.AWS_SECRET_ACCESS_KEY,
          ...(v.AWS_SESSION_TOKEN ? { sessionToken: v.AWS_SESSION_TOKEN } : {}),
        };
      }
    }
  }

  const admission = listen ? admissionOf(v, problems) : undefined;

  if (problems.length > 0 || store === undefined || "issue" in auth) return fail(problems);

  const bounds = APP_OPTION_BOUNDS;
  const values = v as unknown as Record<string, number | undefined>;
  const limits: ApiLimits = {};
  for (const name of LIMIT_NAMES) {
    const value = values[LIMIT_VARIABLES[name]];
    if (value !== undefined) limits[name] = value;
  }
  const app: ServerConfig["app"] = {
    maxSkewMs: v.LEASEHOLD_MAX_SKEW_MS ?? bounds.maxSkewMs.default,
    watchPollMs: v.LEASEHOLD_WATCH_POLL_MS ?? bounds.watchPollMs.default,
    heartbeatMs: v.LEASEHOLD_HEARTBEAT_MS ?? bounds.heartbeatMs.default,
    limits,
  };
  const consoleOptions: ResolvedConsoleOptions = {
    ui: entry !== "lambda" && v.LEASEHOLD_CONSOLE !== "0",
    historyTerms: v.LEASEHOLD_HISTORY_TERMS ?? CONSOLE_BOUNDS.historyTerms.default,
    historyLeases: v.LEASEHOLD_HISTORY_LEASES ?? CONSOLE_BOUNDS.historyLeases.default,
  };
  const listener = listen
    ? (Object.fromEntries(
        (Object.keys(LISTENER_BOUNDS) as Array<keyof ListenerLimits>).map((n) => [
          n,
          values[LISTENER_VARIABLES[n]] ?? LISTENER_BOUNDS[n].default,
        ]),
      ) as ListenerLimits)
    : undefined;
  return {
    entry,
    ...(listen ? { listen } : {}),
    ...(listener ? { listener } : {}),
    ...(admission ? { admission } : {}),
    store,
    auth: auth.auth,
    app,
    console: consoleOptions,
    logFormat: v.LEASEHOLD_LOG ?? "text",
    storeEnv,
    ...(awsCredentials ? { awsCredentials } : {}),
    warnings,
  };
}

/** Admission's bounds of a Node entry; LEASEHOLD_RESERVED_IN_FLIGHT must stay below LEASEHOLD_IN_FLIGHT. */
function admissionOf(v: Values, problems: FieldIssue[]): Record<AdmissionName, number> {
  const resolved = resolveAdmission({
    inFlight: v.LEASEHOLD_IN_FLIGHT,
    reservedInFlight: v.LEASEHOLD_RESERVED_IN_FLIGHT,
    lateMs: v.LEASEHOLD_LATE_MS,
  });
  if (resolved.reservedInFlight >= resolved.inFlight) {
    problems.push({
      path: "LEASEHOLD_RESERVED_IN_FLIGHT",
      message: `expected fewer requests than LEASEHOLD_IN_FLIGHT (${resolved.inFlight}), got ${resolved.reservedInFlight}: the rest serve acquisitions, reads, lists and watches`,
    });
  }
  return resolved;
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== "";
}

/** Lays the flags over the environment and remembers which variable a flag stands for, for messages. */
function applyFlags(env: Env, flags: ServeFlags): { merged: Record<string, unknown>; shown: (path: string) => string } {
  const merged: Record<string, unknown> = { ...env };
  const byFlag = new Map<string, string>();
  const set = (name: keyof typeof FLAG_OF, value: string | undefined) => {
    if (value === undefined) return;
    merged[name] = value;
    byFlag.set(name, FLAG_OF[name]);
  };
  set("LEASEHOLD_STORE", flags.store);
  set("HOST", flags.host);
  set("PORT", flags.port === undefined ? undefined : String(flags.port));
  set("LEASEHOLD_INSECURE_NO_AUTH", flags.insecureNoAuth ? "1" : undefined);
  return { merged, shown: (path) => byFlag.get(path) ?? path };
}

type Values = z.output<typeof serverEnvSchema>;

const STORES_ON_WORKERS = "unset it (Durable Objects) or use dynamodb://";

/** The store of `entry`, by the registry's rules (src/open-store.ts): its choice and where each backend runs. */
function chooseStore(
  v: Values,
  entry: Entry,
  flags: ServeFlags,
  problems: FieldIssue[],
  warnings: string[],
): StoreChoice | undefined {
  const url = v.LEASEHOLD_STORE;
  if (entry === "worker") {
    if (url === undefined) return { kind: "durable-objects" };
    const why = refusedOn("workers", url);
    if (why !== undefined) {
      problems.push({
        path: "LEASEHOLD_STORE",
        message: `the ${url.kind} store does not run on Workers (${why}); ${STORES_ON_WORKERS}`,
      });
      return undefined;
    }
    return { kind: "url", url: url.url, spec: url, from: "LEASEHOLD_STORE" };
  }
  if (entry === "lambda") {
    if (url === undefined) {
      problems.push({
        path: "LEASEHOLD_STORE",
        message: "not set: expected a shared store such as dynamodb://leasehold-leases?region=eu-west-1",
      });
      return undefined;
    }
    const why = refusedOn("lambda", url);
    if (why !== undefined) {
      problems.push({ path: "LEASEHOLD_STORE", message: `the ${url.kind} store is refused on Lambda: ${why}` });
      return undefined;
    }
    return { kind: "url", url: url.url, spec: url, from: "LEASEHOLD_STORE" };
  }
  // npm start and leasehold serve: --store (laid over LEASEHOLD_STORE), else LEASEHOLD_STORE, else LEASEHOLD_DB.
  let choice: ReturnType<typeof chooseStoreUrl>;
  try {
    choice = chooseStoreUrl({
      flag: flags.store === undefined ? undefined : url?.url,
      store: url?.url,
      db: v.LEASEHOLD_DB,
    });
  } catch (error) {
    if (!isLeaseValidationError(error)) throw error;
    problems.push(...error.issues);
    return undefined;
  }
  warnings.push(...choice.warnings);
  const spec: StoreUrl = url !== undefined && choice.url === url.url ? url : parseStoreUrl(choice.url);
  return { kind: "url", url: choice.url, spec, from: choice.from };
}

/** The one line every entry logs when it starts: where, which store, the real auth mode, the settings. */
export function startupLine(config: ServerConfig, where: string): string {
  const store =
    config.store.kind === "durable-objects"
      ? "Durable Objects (LEASES)"
      : `${config.store.url}${config.store.from === "LEASEHOLD_STORE" ? "" : ` (${config.store.from})`}`;
  const { limits, ...timing } = config.app;
  const settings = [...Object.entries(timing), ...Object.entries(limits), ...Object.entries(config.admission ?? {})]
    .map(([k, value]) => `${k} ${value}`)
    .join(", ");
  return `API on ${where}; store ${redactUrl(store)}; auth: ${describeAuth(config.auth)}; ${settings}`;
}

// ---------------------------------------------------------------------------------------------
// Typos.

function unknownVariableWarnings(env: Env): string[] {
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
