/**
 * The leasehold HTTP API (docs/design.md §5): `createApp({ store, auth, clock, limits })` returns a
 * Hono app; runtimes only wire it (src/runtime/*). This file builds the services once and wires
 * the request checks (src/api/middleware.ts) and the routes by concern (src/api/routes/: leases,
 * the raw compare-and-swap, groups, watch, service routes; the console's, src/api/console/);
 * problem+json errors (RFC 9457), bearer tokens scoped to verbs and name prefixes
 * (src/api/auth.ts), bounds on what one caller can make the server hold (src/api/limits.ts). The OpenAPI 3.1 document that is the contract is
 * declared in ./openapi.ts from the same zod schemas the routes validate with.
 * Lease names contain "/", so clients URL-encode them in paths (adapters%2Fbilling).
 */
import { OpenAPIHono, type z } from "@hono/zod-openapi";
import { type Clock, systemClock } from "../clock.js";
import type { LeaseStore } from "../lease.js";
import { zodIssues } from "../lease.js";
import { type AuthConfig, Authorizer } from "./auth.js";
import { type ConsoleOptions, registerConsole } from "./console/index.js";
import type { Deps, Env, StreamSupport } from "./context.js";
import { LeaseService } from "./lease-service.js";
import { RecordQuota, WatchStreams } from "./limits.js";
import { type ApiLogger, failureFields, silentLogger } from "./log.js";
import { meteredStore } from "./metered-store.js";
import { methodNotAllowed } from "./methods.js";
import { ApiMetrics } from "./metrics.js";
import { authenticate, countRequests, jsonBodies, loopbackHostsOnly } from "./middleware.js";
import { apiRoutes } from "./openapi.js";
import { resolveAppOptions } from "./options.js";
import { describeIssues, ProblemError, problemHeaders, toProblem } from "./problems.js";
import { registerCasRoute } from "./routes/cas.js";
import { registerGroupRoutes } from "./routes/groups.js";
import { registerLeaseRoutes } from "./routes/leases.js";
import { registerOpsRoutes } from "./routes/ops.js";
import { registerWatchRoute } from "./routes/watch.js";
import { ShardService } from "./shard-service.js";
import { WatchHub } from "./watch-hub.js";

export interface ApiLimits {
  /** Largest accepted request body. Default 4096 bytes. */
  bodyBytes?: number;
  /** Largest page of a listing. Default 1000. */
  listLimit?: number;
  /** Open watch streams of this instance (the console's streams included). Default 1000; over it 503. */
  watchStreams?: number;
  /** Open watch streams of one token (of everyone without tokens), the console's included. Default 100; over it 429. */
  watchStreamsPerToken?: number;
  /** Records under one token prefix that a create may bring the count to. Default 10000; over it 429. */
  recordsPerPrefix?: number;
  /** New records one token may create per minute. Default 600; over it 429. */
  createsPerMinute?: number;
  /** Bucket records one group heartbeat writes at most (the rest at the next). Default 64. */
  bucketWritesPerHeartbeat?: number;
}

export interface AppOptions {
  store: LeaseStore;
  /** Bearer tokens, or `{ insecureNoAuth: true }` for local use only. */
  auth: AuthConfig;
  clock?: Clock;
  limits?: ApiLimits;
  /**
   * Bound on wall-clock difference between any two API instances (and the store's writers).
   * A lease is free once `renewedAt + leaseMs + maxSkewMs` has passed here. Default 1000 ms.
   */
  maxSkewMs?: number;
  /**
   * While a lease is watched, how often this instance re-reads it to see other instances' writes
   * (one read per watched lease per interval, shared by all its streams). Default 1000 ms.
   */
  watchPollMs?: number;
  /** SSE keep-alive comment interval. Default 15000 ms. */
  heartbeatMs?: number;
  /**
   * How this runtime carries streams (the watch route's Server-Sent Events). Default: a stream
   * lasts until its client leaves.
   * - `{ unavailable: detail }`: responses are buffered (the Lambda `handler` export), so a stream
   *   would reach its client only when the invocation ends: the watch route answers 501
   *   `streaming-unavailable` with `detail` (how to enable streaming) instead.
   * - `{ timeLeft }`: the runtime stops each request at a deadline (a Lambda invocation's
   *   timeout). `timeLeft(c)` is how long a stream may still run (ms); the stream then sends an
   *   `end` event and closes, and the client resumes at once with Last-Event-ID, missing nothing.
   */
  streams?: StreamSupport;
  /**
   * "loopback": serve only requests whose Host is localhost, 127.x.x.x or [::1] (403 otherwise), so
   * a browser cannot reach a server without tokens through DNS rebinding. The Node entries set it
   * when they serve on loopback without tokens.
   */
  allowedHosts?: "loopback";
  /**
   * The operational log: requests answered 5xx, store failures, holder changes this server wrote
   * (src/api/log.ts). Default: none; the runtimes pass one (LEASEHOLD_LOG picks its format).
   */
  log?: ApiLogger;
  /** The console at /ui and the change log behind it (src/api/console/, docs/console.md). */
  console?: ConsoleOptions;
}

export type { StreamSupport } from "./context.js";

export function createApp(options: AppOptions): OpenAPIHono<Env> {
  // Bounds, defaults and messages: src/api/options.ts.
  const resolved = resolveAppOptions(options);
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  const auth = new Authorizer(options.auth);
  const metrics = new ApiMetrics();
  const store = meteredStore(options.store, clock, metrics, log);
  const hub = new WatchHub(store, clock, resolved.watchPollMs);
  const list = store.list;
  const quota = new RecordQuota(
    resolved,
    clock,
    list ? (prefix, limit) => list.call(store, prefix, { limit }) : undefined,
  );
  const service = new LeaseService({
    store,
    clock,
    maxSkewMs: resolved.maxSkewMs,
    publish: (name, stored) => hub.publish(name, stored),
    quota,
    log,
  });
  const watchers = new WatchStreams(resolved);
  metrics.gauge("leasehold_watch_streams_open", "Watch streams open now.", () => watchers.count.total);
  metrics.gauge("leasehold_watched_leases", "Leases with at least one watch stream (one feed each).", () => hub.size);
  const deps: Deps = {
    auth,
    service,
    shards: new ShardService(service, clock, resolved.maxSkewMs, resolved.bucketWritesPerHeartbeat),
    hub,
    watchers,
    metrics,
    clock,
    options: resolved,
    streams: options.streams ?? {},
    routes: apiRoutes(auth.secured),
  };

  const app = new OpenAPIHono<Env>({
    defaultHook: (result) => {
      if (!result.success) {
        const errors = zodIssues(result.error as z.ZodError);
        throw new ProblemError("validation", `invalid request: ${describeIssues(errors)}`, { errors });
      }
    },
  });

  // Request checks in order, each before anything reads what the next needs (docs/design.md §5).
  app.use("*", countRequests(metrics));
  app.use(
    "*",
    methodNotAllowed(() => app.routes),
  );
  if (options.allowedHosts === "loopback") app.use("*", loopbackHostsOnly());
  app.use("/v1/*", authenticate(auth));
  app.use("/v1/*", jsonBodies(resolved.bodyBytes));

  registerLeaseRoutes(app, deps);
  registerCasRoute(app, deps);
  registerGroupRoutes(app, deps);
  registerWatchRoute(app, deps);
  registerConsole(app, deps, options.console);
  registerOpsRoutes(app, deps);

  app.notFound(() => {
    throw new ProblemError("not-found", "no such route (lease names are URL-encoded: adapters%2Fbilling)");
  });

  app.onError((error, c) => {
    let p = toProblem(error);
    // 501 streaming-unavailable is this deployment's answer by design, not a failure to log.
    if (p.status >= 500 && p.kind !== "streaming-unavailable") {
      log.error("request failed", {
        method: c.req.method,
        route: c.req.routePath,
        status: p.status,
        problem: p.kind,
        detail: p.detail,
        ...(error instanceof ProblemError ? {} : failureFields(error)),
      });
    }
    // The current record rides along only for a token that may read it: a write-only token
    // learns that it lost, not what the record holds.
    const principal = c.get("principal");
    const lease = p.extra.lease;
    if (lease && (!principal || !auth.authorize(principal, "read", lease.name).ok)) p = p.withoutLease();
    return c.body(JSON.stringify(p.toBody()), p.status as 400, problemHeaders(p));
  });

  return app;
}
