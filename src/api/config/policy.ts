/**
 * The API server's configuration, read the same way by every entry: `npm start`
 * (src/runtime/node.ts), `leasehold serve` (src/cli/serve.ts), the Lambda handler
 * (src/runtime/lambda.ts), the Worker (src/runtime/worker.ts), and infra/aws, which checks at synth
 * time the environment it gives the function. One schema (./variables.ts) reads an environment
 * object (process.env, a function's environment, a Worker's bindings); this module is the per-entry
 * policy over it, and returns the options those entries wire up. The start-up line each entry logs
 * is ./startup-line.ts; the README's variable table documents it variable by variable.
 *
 * Rules every entry shares:
 * - Unset and "" mean the same (an empty `FOO=` line in an env file is common).
 * - A bad value refuses to start with the variable's name, the value (never a secret's) and what
 *   was expected; nothing is guessed (a number binding of a Worker counts as its digits).
 * - A variable an entry cannot honour (PORT on Lambda, LEASEHOLD_DB on the Worker, ...) is refused
 *   there with the reason; a backend's variables where no backend that reads them runs, by the
 *   backends' own declarations. No platform sets these names itself, so refusing never trips over
 *   the platform's own variables.
 * - LEASEHOLD_TOKENS together with LEASEHOLD_INSECURE_NO_AUTH=1 is a contradiction and refused, as
 *   are LEASEHOLD_STORE together with LEASEHOLD_DB.
 * - Unknown LEASEHOLD_* names are reported as warnings (a typo must not silently mean "default").
 *
 * Runtime-neutral: no Node API here; it runs inside the Worker and the Lambda bundle too.
 */

import type { z } from "zod";
import type { Backend, Runtime } from "../../backends/backend.js";
import { sqliteBackend } from "../../backends/sqlite/backend.js";
import { type FieldIssue, isLeaseValidationError, LeaseValidationError } from "../../errors.js";
import { zodIssues } from "../../lease.js";
import {
  BACKENDS,
  backendOf,
  type ChosenStore,
  chooseStoreUrl,
  parseStoreUrl,
  refusedOn,
  type StoreUrl,
  storeUrlFormsOn,
} from "../../open-store.js";
import type { ApiLimits } from "../app-options.js";
import { CONSOLE_BOUNDS, type ResolvedConsoleOptions } from "../console/options.js";
import type { LogFormat } from "../log.js";
import { type AdmissionName, APP_OPTION_BOUNDS, LIMIT_NAMES, resolveAdmission } from "../options.js";
import { type AuthMode, resolveAuth } from "./auth-mode.js";
import type { Env } from "./fields.js";
import {
  ADMISSION_VARIABLES,
  DEFAULT_HOST,
  DEFAULT_PORT,
  LIMIT_VARIABLES,
  LISTENER_BOUNDS,
  LISTENER_VARIABLES,
  type ListenerLimits,
  type ServerVariable,
  serverEnvSchema,
  storeEnvSchema,
  storeFields,
  unknownVariableWarnings,
} from "./variables.js";

/** The entries that read the server configuration. */
export type Entry = "node" | "serve" | "lambda" | "worker";

export const ENTRY_NAMES: Record<Entry, string> = {
  node: "npm start",
  serve: "leasehold serve",
  lambda: "the Lambda handler",
  worker: "the Worker",
};

/** Where each entry runs, in the backends' terms (`Backend.runtimes`). */
export const RUNTIME_OF: Record<Entry, Runtime> = { node: "node", serve: "node", lambda: "lambda", worker: "workers" };

/** The Worker's store when LEASEHOLD_STORE is unset: its `LeaseObject` namespace (wrangler.toml). */
export const WORKER_DEFAULT_STORE = "durable-object:LEASES";

// ---------------------------------------------------------------------------------------------
// Where a variable cannot work, and why.

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
  LEASEHOLD_DB: refusedWhere([sqliteBackend], "it names a SQLite file"),
  LEASEHOLD_WATCH_STREAMS: { lambda: ONE_REQUEST_PER_INSTANCE },
  LEASEHOLD_WATCH_STREAMS_PER_TOKEN: { lambda: ONE_REQUEST_PER_INSTANCE },
  LEASEHOLD_CONSOLE: {
    lambda:
      "every console view holds watch streams, and each stream holds a Lambda instance for up to 15 minutes of billed duration: serve the console from a Node or Workers deployment of the same store",
  },
  ...Object.fromEntries(Object.values(LISTENER_VARIABLES).map((name) => [name, NO_NODE_LISTENER])),
  ...Object.fromEntries(Object.values(ADMISSION_VARIABLES).map((name) => [name, PER_INSTANCE_ADMISSION])),
  ...Object.fromEntries(
    Object.keys(storeFields).map((name) => [
      name,
      refusedWhere(
        BACKENDS.filter((b) => b.env?.[name] !== undefined),
        `only the ${BACKENDS.filter((b) => b.env?.[name] !== undefined)
          .map((b) => b.kind)
          .join(" and ")} store reads it`,
      ),
    ]),
  ),
};

/**
 * The entries where none of `backends` runs, each with the backends' own reason
 * (`Backend.runtimes`): a variable only those backends read is refused there.
 */
function refusedWhere(backends: readonly Backend[], what: string): Partial<Record<Entry, string>> {
  const refused: Partial<Record<Entry, string>> = {};
  for (const entry of Object.keys(RUNTIME_OF) as Entry[]) {
    const reasons = backends.map((b) => b.runtimes[RUNTIME_OF[entry]]);
    if (reasons.every((r) => r !== true)) refused[entry] = `${what}, and ${reasons.join("; ")}`;
  }
  return refused;
}

// ---------------------------------------------------------------------------------------------
// What the entries get.

/** The store a server opens: its URL, what the URL says, and where it came from (for the start-up line). */
export type ServerStore = ChosenStore & { spec: StoreUrl };

export interface ServerConfig {
  entry: Entry;
  /** `npm start` and `leasehold serve` only. */
  listen?: { host: string; port: number };
  store: ServerStore;
  auth: AuthMode;
  /** createApp's options, with their defaults filled in, for the ones this entry uses. */
  app: { maxSkewMs: number; watchPollMs: number; heartbeatMs: number; storeTimeoutMs: number; limits: ApiLimits };
  /** `npm start` and `leasehold serve`: admission's bounds (createApp's `admission`, with a lateness probe). */
  admission?: Record<AdmissionName, number>;
  /** LEASEHOLD_CONSOLE and LEASEHOLD_HISTORY_*: createApp's `console` (off on Lambda: see NOT_READ_BY). */
  console: ResolvedConsoleOptions;
  /** `npm start` and `leasehold serve`: the Node listener's bounds. */
  listener?: ListenerLimits;
  /** LEASEHOLD_LOG: the server log's format (src/api/log.ts). */
  logFormat: LogFormat;
  /** What openStore may take defaults from: the variables the backends declare (region, project, token, keys). */
  storeEnv: Record<string, string>;
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
  const parsedStoreEnv = storeEnvSchema.safeParse(merged);
  const fieldIssues = [
    ...(parsed.success ? [] : zodIssues(parsed.error)),
    ...(parsedStoreEnv.success ? [] : zodIssues(parsedStoreEnv.error)),
  ];
  // A refused variable's own parse error adds nothing: where it is not read, its value is moot.
  const issues = [...refused, ...fieldIssues.filter((i) => !refused.some((r) => r.path === i.path))];
  if (issues.length > 0 || !parsed.success || !parsedStoreEnv.success) return fail(issues);
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
  for (const name of Object.keys(storeFields)) {
    const value = parsedStoreEnv.data[name];
    if (typeof value === "string") storeEnv[name] = value;
  }
  // What the chosen backend still needs to open here (a region, a Worker's keys), from its declaration.
  if (store !== undefined) {
    for (const issue of backendOf(store.spec.kind).check?.(store.spec, storeEnv, RUNTIME_OF[entry]) ?? []) {
      problems.push({ path: issue.path === "" ? "LEASEHOLD_STORE" : issue.path, message: issue.message });
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
    storeTimeoutMs: v.LEASEHOLD_STORE_TIMEOUT_MS ?? bounds.storeTimeoutMs.default,
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

const RUNTIME_NAMES: Record<Runtime, string> = { node: "Node", lambda: "Lambda", workers: "Workers" };

/**
 * The store of `entry`, by the rules of src/open-store.ts (--store, LEASEHOLD_STORE, LEASEHOLD_DB;
 * on the Worker its Durable Object namespace by default; on Lambda a shared store is required),
 * refused where its backend's declaration says it does not run.
 */
function chooseStore(
  v: Values,
  entry: Entry,
  flags: ServeFlags,
  problems: FieldIssue[],
  warnings: string[],
): ServerStore | undefined {
  const url = v.LEASEHOLD_STORE;
  let chosen: ServerStore;
  if (url !== undefined && (entry === "lambda" || entry === "worker")) {
    chosen = { url: url.url, spec: url, from: "LEASEHOLD_STORE" };
  } else if (entry === "worker") {
    chosen = { url: WORKER_DEFAULT_STORE, spec: parseStoreUrl(WORKER_DEFAULT_STORE), from: "default" };
  } else if (entry === "lambda") {
    problems.push({
      path: "LEASEHOLD_STORE",
      message: "not set: expected a shared store such as dynamodb://leasehold-leases?region=eu-west-1",
    });
    return undefined;
  } else {
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
    chosen = { url: choice.url, spec, from: choice.from };
  }
  const runtime = RUNTIME_OF[entry];
  const why = refusedOn(runtime, chosen.spec);
  if (why !== undefined) {
    problems.push({
      path: "LEASEHOLD_STORE",
      message: `the ${chosen.spec.kind} store does not run on ${RUNTIME_NAMES[runtime]}: ${why}; use one that does: ${storeUrlFormsOn(runtime).join(", ")}`,
    });
    return undefined;
  }
  return chosen;
}
