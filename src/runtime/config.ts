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
 *   was expected; nothing is guessed or coerced.
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
import { type AuthConfig, parseTokens, type TokenScope } from "../api/auth.js";
import { APP_OPTION_BOUNDS, type Bounds, expectation } from "../api/options.js";
import { type FieldIssue, LeaseValidationError } from "../errors.js";
import { parseStoreUrl, type StoreUrl } from "../open-store.js";

/** The entries that read the server configuration. */
export type Entry = "node" | "serve" | "lambda" | "worker";

export const ENTRY_NAMES: Record<Entry, string> = {
  node: "npm start",
  serve: "leasehold serve",
  lambda: "the Lambda handler",
  worker: "the Worker",
};

/** The SQLite file `npm start` and `leasehold serve` use when neither LEASEHOLD_STORE nor LEASEHOLD_DB is set. */
export const DEFAULT_DB = "./data/leasehold.db";
export const DEFAULT_PORT = 8787;
export const DEFAULT_HOST = "127.0.0.1";
const PORT_BOUNDS: Bounds = { min: 0, max: 65_535, default: DEFAULT_PORT, unit: "a port number" };

// ---------------------------------------------------------------------------------------------
// Field schemas: one per kind of value, shared with infra/aws's deploy settings.

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * A variable's text. Unset and "" both mean unset; a number (a wrangler `[vars]` entry written
 * without quotes arrives as one) counts as its decimal digits; anything else is refused.
 */
export const envText = z.preprocess(
  (value) => (value === undefined || value === "" ? undefined : typeof value === "number" ? String(value) : value),
  z.string({ error: (issue) => `expected a string, got ${kindOf(issue.input)}` }).optional(),
);

type Parse<T> = (value: string) => { ok: true; value: T } | { ok: false; message: string };

/** A variable read by `parse`; unset stays undefined. */
export function envField<T>(parse: Parse<T>) {
  return envText.transform((value, ctx): T | undefined => {
    if (value === undefined) return undefined;
    const result = parse(value);
    if (result.ok) return result.value;
    ctx.addIssue({ code: "custom", message: result.message });
    return z.NEVER;
  });
}

/** A whole number within `bounds`: "expected a whole number of milliseconds 0-60000, got "1s"". */
export function envWholeNumber(bounds: Bounds) {
  return envField((text) => {
    const n = Number(text);
    return /^\d+$/.test(text) && n >= bounds.min && n <= bounds.max
      ? { ok: true, value: n }
      : { ok: false, message: `${expectation(bounds)}, got ${JSON.stringify(text)}` };
  });
}

/** One of a few words. */
export function envChoice<const T extends string>(choices: readonly T[], meaning = "") {
  const list = choices.map((c) => JSON.stringify(c)).join(" or ");
  return envField((text) =>
    (choices as readonly string[]).includes(text)
      ? { ok: true, value: text as T }
      : { ok: false, message: `expected ${list}${meaning}, got ${JSON.stringify(text)}` },
  );
}

/** Text matching `pattern`, described by `what` in the message. */
export function envMatching(pattern: RegExp, what: string) {
  return envField((text) =>
    pattern.test(text)
      ? { ok: true, value: text }
      : { ok: false, message: `expected ${what}, got ${JSON.stringify(text)}` },
  );
}

/** LEASEHOLD_TOKENS: the API's own parser; messages point into the array, never echo a token. */
export const envTokens = envField<TokenScope[]>((text) => {
  let tokens: TokenScope[];
  try {
    tokens = parseTokens(text);
  } catch (error) {
    if (!(error instanceof LeaseValidationError)) throw error;
    const where = (path: string) => (path === "" ? "" : `${path.replace(/^(\d+)/, "[$1]")}: `);
    return { ok: false, message: error.issues.map((i) => `${where(i.path)}${i.message}`).join("; ") };
  }
  if (tokens.length === 0) return { ok: false, message: "expected at least one token, got []" };
  return { ok: true, value: tokens };
});

/** A store URL, described by the URL parser (which names the wrong part; the URL is not echoed). */
const envStoreUrl = envField<StoreUrl & { url: string }>((text) => {
  try {
    return { ok: true, value: { ...parseStoreUrl(text), url: text } };
  } catch (error) {
    if (!(error instanceof LeaseValidationError)) throw error;
    return { ok: false, message: error.issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ") };
  }
});

const envSqlitePath = envField((text) => {
  try {
    parseStoreUrl(`sqlite:${text}`);
    return { ok: true, value: text };
  } catch {
    return { ok: false, message: `expected a file path such as ./data/leasehold.db, got ${JSON.stringify(text)}` };
  }
});

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
  /** Defaults the store URL takes from the environment (see openStore). */
  LEASEHOLD_TOKEN: envText,
  AWS_REGION: envMatching(/^[a-z0-9-]{1,64}$/, "an AWS region such as eu-west-1"),
  AWS_DEFAULT_REGION: envMatching(/^[a-z0-9-]{1,64}$/, "an AWS region such as eu-west-1"),
  GOOGLE_CLOUD_PROJECT: envText,
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
const NO_STREAMING =
  "watch streams need response streaming, which the buffered Lambda integration lacks (serve /watch from Node or Workers)";

/** Where a variable cannot work, and why: setting it there is refused with this reason. */
export const NOT_READ_BY: Partial<Record<ServerVariable, Partial<Record<Entry, string>>>> = {
  PORT: NO_LISTENER,
  HOST: NO_LISTENER,
  LEASEHOLD_DB: {
    lambda:
      "each Lambda instance would have its own SQLite file, so two instances could elect two leaders; use LEASEHOLD_STORE=dynamodb://TABLE",
    worker: "a Worker has no filesystem; leases live in Durable Objects (LEASES) or in DynamoDB (LEASEHOLD_STORE)",
  },
  LEASEHOLD_WATCH_POLL_MS: { lambda: NO_STREAMING },
  LEASEHOLD_HEARTBEAT_MS: { lambda: NO_STREAMING },
  LEASEHOLD_TOKEN: {
    worker: "it is the bearer token of an http(s):// store, and the Worker serves Durable Objects or DynamoDB only",
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

export type AuthMode =
  | { mode: "tokens"; tokens: TokenScope[] }
  /** No tokens, bound to loopback: the default of `npm start` and `leasehold serve`. */
  | { mode: "none"; because: "loopback"; host: string }
  /** Explicitly off: `flag` is how it was asked for (LEASEHOLD_INSECURE_NO_AUTH=1, --insecure-no-auth). */
  | { mode: "none"; because: "insecure-flag"; flag: string };

export interface ServerConfig {
  entry: Entry;
  /** `npm start` and `leasehold serve` only. */
  listen?: { host: string; port: number };
  store: StoreChoice;
  auth: AuthMode;
  /** createApp's options, with their defaults filled in, for the ones this entry uses. */
  app: { maxSkewMs: number; watchPollMs?: number; heartbeatMs?: number };
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

const FLAG_OF = {
  LEASEHOLD_STORE: "--store",
  HOST: "--host",
  PORT: "--port",
  LEASEHOLD_INSECURE_NO_AUTH: "--insecure-no-auth",
} as const;

type Env = Readonly<Record<string, unknown>>;

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
    { tokens: v.LEASEHOLD_TOKENS, insecure: v.LEASEHOLD_INSECURE_NO_AUTH === "1", host: listen?.host, entry },
    {
      tokens: "LEASEHOLD_TOKENS",
      insecure: flags.insecureNoAuth ? "--insecure-no-auth" : "LEASEHOLD_INSECURE_NO_AUTH=1",
      insecureHint:
        entry === "serve" ? "--insecure-no-auth (or LEASEHOLD_INSECURE_NO_AUTH=1)" : "LEASEHOLD_INSECURE_NO_AUTH=1",
    },
  );
  if ("issue" in auth) problems.push(auth.issue);

  const storeEnv: Record<string, string> = {};
  for (const name of ["LEASEHOLD_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "GOOGLE_CLOUD_PROJECT"] as const) {
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

  if (problems.length > 0 || store === undefined || "issue" in auth) return fail(problems);

  const bounds = APP_OPTION_BOUNDS;
  const app: ServerConfig["app"] = { maxSkewMs: v.LEASEHOLD_MAX_SKEW_MS ?? bounds.maxSkewMs.default };
  if (entry !== "lambda") {
    app.watchPollMs = v.LEASEHOLD_WATCH_POLL_MS ?? bounds.watchPollMs.default;
    app.heartbeatMs = v.LEASEHOLD_HEARTBEAT_MS ?? bounds.heartbeatMs.default;
  }
  return {
    entry,
    ...(listen ? { listen } : {}),
    store,
    auth: auth.auth,
    app,
    storeEnv,
    ...(awsCredentials ? { awsCredentials } : {}),
    warnings,
  };
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
const NOT_ON_WORKERS: Record<string, string> = {
  gcs: "its SDK hangs inside workerd without sending a request",
  sqlite: "a Worker has no filesystem",
  memory: "each isolate would keep its own leases, so two isolates could elect two leaders",
  http: "the HTTP store is not bundled into the Worker; point clients at that API directly",
};
const NOT_ON_LAMBDA: Record<string, string> = {
  sqlite: "each Lambda instance would have its own file, so two instances could elect two leaders",
  memory: "each Lambda instance would keep its own leases, so two instances could elect two leaders",
};

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
    if (url.kind !== "dynamodb") {
      problems.push({
        path: "LEASEHOLD_STORE",
        message: `the ${url.kind} store does not run on Workers (${NOT_ON_WORKERS[url.kind]}); ${STORES_ON_WORKERS}`,
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
    const why = NOT_ON_LAMBDA[url.kind];
    if (why !== undefined) {
      problems.push({ path: "LEASEHOLD_STORE", message: `the ${url.kind} store is refused on Lambda: ${why}` });
      return undefined;
    }
    return { kind: "url", url: url.url, spec: url, from: "LEASEHOLD_STORE" };
  }
  // npm start and leasehold serve: --store, else LEASEHOLD_STORE, else the SQLite file LEASEHOLD_DB.
  if (url !== undefined && flags.store !== undefined) {
    if (v.LEASEHOLD_DB !== undefined) warnings.push("LEASEHOLD_DB is ignored: --store names the store");
    return { kind: "url", url: url.url, spec: url, from: "--store" };
  }
  if (url !== undefined && v.LEASEHOLD_DB !== undefined) {
    problems.push({
      path: "LEASEHOLD_DB",
      message:
        "contradicts LEASEHOLD_STORE: LEASEHOLD_DB names the SQLite file used when LEASEHOLD_STORE is unset; set only one",
    });
    return undefined;
  }
  if (url !== undefined) return { kind: "url", url: url.url, spec: url, from: "LEASEHOLD_STORE" };
  const path = v.LEASEHOLD_DB ?? DEFAULT_DB;
  return {
    kind: "url",
    url: `sqlite:${path}`,
    spec: { kind: "sqlite", path },
    from: v.LEASEHOLD_DB === undefined ? "default" : "LEASEHOLD_DB",
  };
}

// ---------------------------------------------------------------------------------------------
// Auth: one rule for the environment and for the library's serve().

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1)$/;

export function isLoopback(host: string): boolean {
  return LOOPBACK.test(host);
}

export interface AuthInputs {
  tokens: TokenScope[] | undefined;
  insecure: boolean;
  /** The address bound; undefined where nothing is bound (Lambda, Worker): no loopback default there. */
  host: string | undefined;
  entry?: Entry;
}

export interface AuthNames {
  /** How the tokens were given (LEASEHOLD_TOKENS, or `tokens` for a library caller). */
  tokens: string;
  /** How auth was turned off (LEASEHOLD_INSECURE_NO_AUTH=1, --insecure-no-auth, insecureNoAuth). */
  insecure: string;
  /** What to tell a user who has neither. */
  insecureHint: string;
}

/**
 * Tokens: auth on. The insecure flag: auth off, and refused together with tokens (which would be
 * meant to protect something). Neither: off only when bound to loopback; refused elsewhere and on
 * Lambda and Workers, which are reachable by anyone.
 */
export function resolveAuth(input: AuthInputs, names: AuthNames): { auth: AuthMode } | { issue: FieldIssue } {
  const tokens = input.tokens && input.tokens.length > 0 ? input.tokens : undefined;
  if (tokens && input.insecure) {
    const n = tokens.length;
    return {
      issue: {
        path: names.tokens,
        message: `${n} token${n === 1 ? "" : "s"} given together with ${names.insecure}: tokens ask for auth, the flag turns it off; unset one of them`,
      },
    };
  }
  if (tokens) return { auth: { mode: "tokens", tokens } };
  if (input.insecure) return { auth: { mode: "none", because: "insecure-flag", flag: names.insecure } };
  if (input.host !== undefined && isLoopback(input.host)) {
    return { auth: { mode: "none", because: "loopback", host: input.host } };
  }
  const where =
    input.host !== undefined
      ? `refusing to serve on ${input.host} without tokens`
      : `not set: ${input.entry ? ENTRY_NAMES[input.entry] : "the API"} is reachable by anyone, so it needs tokens`;
  return {
    issue: {
      path: names.tokens,
      message: `${where}: set ${names.tokens}, or ${names.insecureHint} if you really mean it${
        input.entry === "lambda"
          ? " (behind IAM auth only)"
          : input.entry === "worker"
            ? " (throwaway deployments only)"
            : ""
      }`,
    },
  };
}

/** What createApp takes. */
export function authConfig(auth: AuthMode): AuthConfig {
  return auth.mode === "tokens" ? { tokens: auth.tokens } : { insecureNoAuth: true };
}

/** The auth mode in words, with the tokens' names and scopes but never a token. */
export function describeAuth(auth: AuthMode): string {
  if (auth.mode === "tokens") {
    const scopes = auth.tokens.map((t, i) => {
      const prefixes = t.prefixes.map((p) => (p === "" ? "all leases" : JSON.stringify(p))).join(", ");
      return `${t.name ?? `#${i + 1}`}: ${t.verbs.join("+")} on ${prefixes}`;
    });
    const n = auth.tokens.length;
    return `${n} token${n === 1 ? "" : "s"} (${scopes.join("; ")})`;
  }
  if (auth.because === "loopback") {
    return `none, because LEASEHOLD_TOKENS is unset and the server is bound to loopback ${auth.host} (any local process can take any lease)`;
  }
  return `none, because of ${auth.flag} (anyone who can reach this server can take any lease)`;
}

/** The one line every entry logs when it starts: where, which store, the real auth mode, the settings. */
export function startupLine(config: ServerConfig, where: string): string {
  const store =
    config.store.kind === "durable-objects"
      ? "Durable Objects (LEASES)"
      : `${config.store.url}${config.store.from === "LEASEHOLD_STORE" ? "" : ` (${config.store.from})`}`;
  const settings = Object.entries(config.app)
    .map(([k, value]) => `${k} ${value}`)
    .join(", ");
  return `API on ${where}; store ${store}; auth: ${describeAuth(config.auth)}; ${settings}`;
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

/**
 * Parses `env` with a schema of variables (infra/aws's deploy settings use this with the fields
 * above); throws `LeaseValidationError(what, ...)` naming each variable that is wrong.
 */
export function readVariables<S extends z.ZodType>(what: string, schema: S, env: Env): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  throw new LeaseValidationError(
    what,
    result.error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message })),
  );
}
