/**
 * What the route modules of the API share (src/api/routes/*): the Hono env, the services built
 * once by `createApp`, and the checks every route makes the same way (the token's scope, who the
 * caller is). Runtime-neutral.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Clock } from "../clock.js";
import type { LeaseStore, Stored } from "../lease.js";
import type { Admission } from "./admission.js";
import { type Authorizer, type Principal, principalName, type Verb } from "./auth.js";
import type { ForceRelease } from "./force-release.js";
import type { Caller, LeaseService } from "./lease-service.js";
import type { LeaseViews } from "./lease-views.js";
import { type CallerKey, EVERYONE, type WatchStreams } from "./limits.js";
import type { ApiMetrics } from "./metrics.js";
import type { apiRoutes } from "./openapi.js";
import type { ResolvedAppOptions } from "./options.js";
import { ProblemError } from "./problems.js";
import type { ShardService } from "./shard-service.js";
import type { StoreHealth } from "./store-deadline.js";
import type { WatchHub } from "./watch-hub.js";

export type Env = {
  Variables: {
    route: string;
    principal: Principal;
    /** Set by admission (src/api/admission.ts) for a request admitted on the holders' share only. */
    renewalsOnly: ProblemError | undefined;
    /** The request's deadline (src/api/request-deadline.ts): every store call for it stops there. */
    deadline: AbortSignal | undefined;
  };
};

/** createApp's `streams` option (src/api/app.ts): whether this runtime streams, and until when. */
export type StreamSupport =
  | { unavailable: string }
  // biome-ignore lint/suspicious/noExplicitAny: the runtime's own bindings (a Lambda context) ride in c.env
  | { timeLeft: (c: Context<any>) => number };
export type Api = OpenAPIHono<Env>;

export interface Deps {
  auth: Authorizer;
  service: LeaseService;
  /** What records look like to callers, read without publishing (what the streams use). */
  views: LeaseViews;
  /** An operator's clearing of a record the server cannot read or judge (verb `force`). */
  forceRelease: ForceRelease;
  shards: ShardService;
  hub: WatchHub;
  watchers: WatchStreams;
  metrics: ApiMetrics;
  clock: Clock;
  options: ResolvedAppOptions;
  /** createApp's `streams`: whether this runtime streams, and until when (`{}`: until the client leaves). */
  streams: StreamSupport | Record<string, never>;
  routes: ReturnType<typeof apiRoutes>;
  /** Renewals first (src/api/admission.ts); undefined: every request is admitted. */
  admission: Admission | undefined;
  /** Whether the store answered lately (src/api/store-deadline.ts), for /readyz. */
  storeHealth: StoreHealth;
  /** The store behind the deadlines and metering, for the /readyz probe. */
  store: LeaseStore;
}

/** 403 unless the request's token may do `verb` on `name`. */
export function allow(deps: Deps, c: Context<Env>, verb: Verb, name: string): void {
  const result = deps.auth.authorize(c.get("principal"), verb, name);
  if (!result.ok) throw new ProblemError("forbidden", result.detail);
}

/** Who is counted for the request's bounds: its token's scope, or everyone without tokens. */
export function callerKey(c: Context<Env>): CallerKey {
  const principal = c.get("principal");
  return principal.kind === "token" ? principal.scope : EVERYONE;
}

/**
 * Counts one more stream of the request's caller (watch and the console's streams alike), or
 * throws 429/503 naming the bound (src/api/limits.ts); returns its release.
 */
export function openStream(deps: Deps, c: Context<Env>): () => void {
  return deps.watchers.open(callerKey(c));
}

/**
 * The caller as the lease service needs it: its name for logs, its quota key and prefix, and
 * whether only a renewal of its may go on (admitted on the holders' share).
 */
export function callerOf(deps: Deps, c: Context<Env>, name: string): Caller {
  const principal = c.get("principal");
  return {
    by: principalName(principal),
    key: callerKey(c),
    quotaPrefix: quotaPrefixOf(deps.auth.scopeOf(principal, name) ?? name, name),
    mayWrite: (other) => deps.auth.authorize(principal, "cas", other).ok,
    renewalsOnly: c.get("renewalsOnly"),
    deadline: c.get("deadline"),
  };
}

/**
 * Where a new record of `name` is counted: under the token prefix that covers it; for a token of
 * every name ("", or no auth), under the name's first segment (`jobs/`), so one count never lists
 * the whole store.
 */
function quotaPrefixOf(scope: string, name: string): string {
  if (scope !== "") return scope;
  const slash = name.indexOf("/");
  return slash === -1 ? name : name.slice(0, slash + 1);
}

/** The ETag of a stored revision, as this API sends it. */
export const etagOf = (stored: Stored) => `"${stored.revision}"`;
