/**
 * The leasehold HTTP API (docs/design.md §5): `createApp({ store, auth, clock, limits })` returns a
 * Hono app; runtimes only wire it (src/runtime/*). Routes under /v1, problem+json errors
 * (RFC 9457), bearer tokens scoped to lease prefixes; the OpenAPI 3.1 document that is the contract
 * is declared in ./openapi.ts from the same zod schemas the routes validate with.
 * Lease names contain "/", so clients URL-encode them in paths (adapters%2Fbilling).
 */
import { OpenAPIHono, type z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler, Next } from "hono";
import { bodyLimit } from "hono/body-limit";
import { streamSSE } from "hono/streaming";
import { type Clock, systemClock } from "../clock.js";
import type { FieldIssue } from "../errors.js";
import { ENTITY_TAG_PATTERN } from "../http/schemas.js";
import type { LeaseStore, Stored } from "../lease.js";
import { UNPAIRED_SURROGATE, validateName, validatePrefix, zodIssues } from "../lease.js";
import { validateGroup, validateMemberId } from "../sharding/layout.js";
import { type AuthConfig, Authorizer, type Principal, type Verb } from "./auth.js";
import { type ConsoleOptions, registerConsole } from "./console/index.js";
import { LeaseService, toView } from "./lease-service.js";
import { type ApiLogger, failureFields, silentLogger } from "./log.js";
import { methodNotAllowed } from "./methods.js";
import { ApiMetrics } from "./metrics.js";
import { apiRoutes, documentParts, PROMETHEUS_TEXT, withSchemas } from "./openapi.js";
import { resolveAppOptions } from "./options.js";
import { PROBLEM_TYPE, ProblemError } from "./problems.js";
import { ShardService } from "./shard-service.js";
import { WatchHub } from "./watch-hub.js";

export interface ApiLimits {
  /** Largest accepted request body. Default 4096 bytes. */
  bodyBytes?: number;
  /** Largest page of a listing. Default 1000. */
  listLimit?: number;
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
   * The operational log: requests answered 5xx, store failures, holder changes this server wrote
   * (src/api/log.ts). Default: none; the runtimes pass one (LEASEHOLD_LOG picks its format).
   */
  log?: ApiLogger;
  /** The console at /ui and the change log behind it (src/api/console/, docs/console.md). */
  console?: ConsoleOptions;
}

type Env = { Variables: { route: string; principal: Principal } };

export function createApp(options: AppOptions): OpenAPIHono<Env> {
  // Bounds, defaults and messages: src/api/options.ts.
  const { bodyBytes, listLimit, maxSkewMs, watchPollMs, heartbeatMs } = resolveAppOptions(options);
  const clock = options.clock ?? systemClock;
  const log = options.log ?? silentLogger;
  const auth = new Authorizer(options.auth);
  const metrics = new ApiMetrics();
  // The hub's polling read goes through the service, so it is timed and published like any read.
  let service: LeaseService;
  const hub = new WatchHub(options.store, clock, watchPollMs, (name) => service.get(name));
  service = new LeaseService(options.store, clock, maxSkewMs, metrics, hub, log);
  const routes = apiRoutes(auth.secured);

  const app = new OpenAPIHono<Env>({
    defaultHook: (result) => {
      if (!result.success) {
        const errors = zodIssues(result.error as z.ZodError);
        throw new ProblemError("validation", `invalid request: ${describeIssues(errors)}`, { errors });
      }
    },
  });

  app.use("*", async (c, next) => {
    c.set("route", c.req.routePath);
    await next();
    metrics.requests.inc({ route: c.req.routePath, method: c.req.method, status: String(c.res.status) });
  });

  // Request checks in order, each before anything reads what the next needs (docs/design.md §5):
  // the method (405), who is asking (401), the body's type (415) and size (413); then per route
  // the name and the token's scope (400, 403), and only then the body itself (400).
  app.use(
    "*",
    methodNotAllowed(() => app.routes),
  );

  app.use("/v1/*", async (c, next) => {
    const result = await auth.authenticate(c.req.header("authorization"));
    if (!result.ok) throw new ProblemError("unauthorized", result.detail);
    c.set("principal", result.value);
    await next();
  });

  const limit = bodyLimit({
    maxSize: bodyBytes,
    onError: () => {
      throw new ProblemError("payload-too-large", `the body must be at most ${bodyBytes} bytes`);
    },
  });
  app.use("/v1/*", async (c, next) => {
    if (c.req.method !== "POST" && c.req.method !== "PUT") return next();
    const type = c.req.header("content-type") ?? "";
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      throw new ProblemError(
        "unsupported-media-type",
        `send Content-Type: application/json (got ${type ? JSON.stringify(type.slice(0, 64)) : "none"})`,
      );
    }
    return limit(c, next);
  });

  const leaseName = (c: Context) => validateName(c.req.param("name"));
  const allowed = (c: Context<Env>, verb: Verb, lease: string) => {
    const result = auth.authorize(c.get("principal"), verb, lease);
    if (!result.ok) throw new ProblemError("forbidden", result.detail);
  };
  // Runs before the route's validators: a token outside its scope is 403 whatever the body says.
  const scoped =
    (verb: Verb): MiddlewareHandler<Env> =>
    async (c, next) => {
      allowed(c, verb, leaseName(c));
      await next();
    };
  // I-JSON (RFC 7493): a string with an unpaired surrogate is not Unicode text, and a store that
  // writes UTF-8 would change it. Refused wherever it is, before the fields are validated.
  const wellFormed: MiddlewareHandler<Env> = async (c, next) => {
    const path = unpairedSurrogateAt(await c.req.json());
    if (path !== undefined) {
      throw new ProblemError("validation", `invalid request: ${path || "body"}: expected no unpaired surrogates`, {
        errors: [{ path, message: "expected no unpaired surrogates (request bodies are I-JSON, RFC 7493)" }],
      });
    }
    await next();
  };
  const leaseResult = (c: Context, outcome: { leader: boolean; stored: Stored }) =>
    c.json({ leader: outcome.leader, lease: toView(outcome.stored) }, 200, { ETag: `"${outcome.stored.revision}"` });

  app.openapi({ ...routes.acquire, middleware: [scoped("write"), wellFormed] }, async (c) =>
    leaseResult(c, await service.acquire(leaseName(c), c.req.valid("json"))),
  );

  app.openapi({ ...routes.renew, middleware: [scoped("write"), wellFormed] }, async (c) =>
    leaseResult(c, await service.renew(leaseName(c), c.req.valid("json"))),
  );

  app.openapi({ ...routes.release, middleware: [scoped("write"), wellFormed] }, async (c) =>
    leaseResult(c, await service.release(leaseName(c), c.req.valid("json"))),
  );

  app.openapi({ ...routes.get, middleware: [scoped("read")] }, async (c) => {
    const name = leaseName(c);
    const stored = await service.get(name);
    if (!stored) throw new ProblemError("not-found", `lease "${name}" does not exist`);
    return c.json(toView(stored), 200, { ETag: `"${stored.revision}"` });
  });

  app.openapi({ ...routes.put, middleware: [scoped("write"), wellFormed] }, async (c) => {
    const name = leaseName(c);
    const expected = expectedRevision(c.req.header("if-match"), c.req.header("if-none-match"));
    if (expected !== null) service.checkRevision("If-Match", expected);
    const stored = await service.put(name, c.req.valid("json"), expected);
    return c.json(toView(stored), expected === null ? 201 : 200, { ETag: `"${stored.revision}"` });
  });

  app.openapi(
    {
      ...routes.list,
      middleware: [
        async (c: Context<Env>, next: Next) => {
          allowed(c, "read", validatePrefix(c.req.query("prefix") ?? ""));
          await next();
        },
      ],
    },
    async (c) => {
      const query = c.req.valid("query");
      const prefix = query.prefix ?? "";
      const limit = Math.min(query.limit ?? 100, listLimit);
      const leases = [];
      for await (const stored of service.list(prefix, query.cursor, limit + 1)) leases.push(toView(stored));
      const more = leases.length > limit;
      const page = leases.slice(0, limit);
      return c.json({ leases: page, next: more ? (page[page.length - 1]?.name ?? null) : null }, 200);
    },
  );

  // Sharded groups (src/api/shard-service.ts): a remote member's session, hand-offs and leave.
  // The token must cover every record of the group, `<group>/...`.
  const shards = new ShardService(service, clock, maxSkewMs);
  const groupMember = (c: Context) => ({
    group: validateGroup(c.req.param("group")),
    member: validateMemberId(c.req.param("member"), "member"),
  });
  const groupScoped: MiddlewareHandler<Env> = async (c, next) => {
    allowed(c, "write", `${groupMember(c).group}/`);
    await next();
  };

  app.openapi({ ...routes.heartbeat, middleware: [groupScoped, wellFormed] }, async (c) => {
    const { group, member } = groupMember(c);
    return c.json(await shards.heartbeat(group, member, c.req.valid("json")), 200);
  });

  app.openapi({ ...routes.handoff, middleware: [groupScoped, wellFormed] }, async (c) => {
    const { group, member } = groupMember(c);
    return c.json(await shards.confirmHandoff(group, member, c.req.valid("json")), 200);
  });

  app.openapi({ ...routes.leave, middleware: [groupScoped, wellFormed] }, async (c) => {
    const { group, member } = groupMember(c);
    return c.json(await shards.leave(group, member, c.req.valid("json")), 200);
  });

  // Server-Sent Events: "lease" events with { lease, free }, the current state first, then every
  // change this instance makes or sees, a "free" event at the instant the lease expires
  // unrenewed, and keep-alive comments. Across instances: changes made elsewhere arrive within
  // watchPollMs (or at once, when the store pushes); see WatchHub.
  app.openAPIRegistry.registerPath(routes.watch);
  app.get("/v1/leases/:name/watch", scoped("read"), async (c) => {
    const name = leaseName(c);
    const first = await service.get(name);
    // HEAD: the headers a GET would send, without opening a stream nobody will read.
    if (c.req.method === "HEAD") return c.body(null, 200, { "Content-Type": "text/event-stream" });
    metrics.watchers.inc();
    // A client resuming with the revision it last saw is not sent that state again, unless it
    // is free now: a held record with an unchanged revision is exactly what it saw, while a
    // record that has since expired may have been sent to it as held.
    const resumedAt = c.req.header("last-event-id");
    return streamSSE(c, async (stream) => {
      const done = new AbortController();
      stream.onAbort(() => done.abort());
      let lastRevision: string | undefined;
      let expiryTimer = new AbortController();
      const send = async (stored: Stored | null, force = false) => {
        const revision = stored?.revision ?? "none";
        if (!force && revision === lastRevision) return;
        const resuming = lastRevision === undefined && revision === resumedAt;
        lastRevision = revision;
        const free = stored === null || service.isFree(stored.record);
        if (!(resuming && !free)) {
          await stream.writeSSE({
            event: "lease",
            id: revision,
            data: JSON.stringify({ lease: stored ? toView(stored) : null, free }),
          });
        }
        expiryTimer.abort();
        expiryTimer = new AbortController();
        if (stored && !free) {
          const timer = expiryTimer;
          const wait = stored.record.renewedAt + stored.record.leaseMs + maxSkewMs - clock.wallNow() + 1;
          void clock.sleep(wait, AbortSignal.any([timer.signal, done.signal])).then(async () => {
            if (!timer.signal.aborted && !done.signal.aborted && lastRevision === revision) await send(stored, true);
          });
        }
      };
      const unsubscribe = hub.subscribe(name, (stored) => void send(stored));
      try {
        await send(first);
        while (!done.signal.aborted) {
          await clock.sleep(heartbeatMs, done.signal);
          if (!done.signal.aborted) await stream.write(": keep-alive\n\n");
        }
      } finally {
        unsubscribe();
        expiryTimer.abort();
        done.abort();
      }
    });
  });

  registerConsole(app, {
    options: options.console,
    service,
    hub,
    clock,
    allowed,
    secured: auth.secured,
    settings: { maxSkewMs, watchPollMs, heartbeatMs, listLimit },
  });

  app.openAPIRegistry.registerPath(routes.health);
  app.get("/healthz", async (c) => c.json({ ok: true }));
  app.openAPIRegistry.registerPath(routes.metrics);
  app.get("/metrics", (c) => c.text(metrics.render(), 200, { "Content-Type": PROMETHEUS_TEXT }));

  const parts = documentParts(auth.secured);
  if (parts.securitySchemes) {
    for (const [name, scheme] of Object.entries(parts.securitySchemes)) {
      app.openAPIRegistry.registerComponent("securitySchemes", name, scheme);
    }
  }
  app.openAPIRegistry.registerComponent("responses", "MethodNotAllowed", parts.methodNotAllowed);
  app.openAPIRegistry.registerPath(routes.openapi);
  // Built once, on first request: the routes do not change after createApp returns.
  let document: unknown;
  app.get("/openapi.json", (c) => {
    document ??= withSchemas(app.getOpenAPI31Document({ openapi: "3.1.0", info: parts.info }), parts.schemas);
    return c.json(document);
  });

  app.notFound(() => {
    throw new ProblemError("not-found", "no such route (lease names are URL-encoded: adapters%2Fbilling)");
  });

  app.onError((error, c) => {
    const p = toProblem(error);
    if (p.status >= 500) {
      log.error("request failed", {
        method: c.req.method,
        route: c.req.routePath,
        status: p.status,
        problem: p.kind,
        detail: p.detail,
        ...(error instanceof ProblemError ? {} : failureFields(error)),
      });
    }
    const headers: Record<string, string> = { "Content-Type": PROBLEM_TYPE };
    if (p.extra.retryAfter !== undefined) headers["Retry-After"] = String(p.extra.retryAfter);
    if (p.extra.allow !== undefined) headers.Allow = p.extra.allow;
    if (p.status === 401) headers["WWW-Authenticate"] = 'Bearer realm="leasehold"';
    return c.body(JSON.stringify(p.toBody()), p.status as 400, headers);
  });

  return app;
}

/**
 * The raw PUT's precondition: `If-Match: "<revision>"` (replace that revision) or
 * `If-None-Match: *` (create). Anything else is the client's error, named by its header.
 */
function expectedRevision(ifMatch: string | undefined, ifNoneMatch: string | undefined): string | null {
  if (ifMatch === undefined && ifNoneMatch === undefined) {
    throw new ProblemError("precondition-required", 'send exactly one of If-Match: "<revision>" or If-None-Match: *');
  }
  if (ifMatch !== undefined && ifNoneMatch !== undefined) {
    throw new ProblemError("validation", "send only one of If-Match and If-None-Match", {
      errors: [{ path: "If-None-Match", message: "expected no If-None-Match beside If-Match" }],
    });
  }
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch.trim() === "*") return null;
    throw new ProblemError("validation", "If-None-Match must be * (create only if absent)", {
      errors: [{ path: "If-None-Match", message: `expected *, got ${JSON.stringify(ifNoneMatch.slice(0, 80))}` }],
    });
  }
  const quoted = ENTITY_TAG_PATTERN.exec((ifMatch ?? "").trim());
  if (!quoted?.[1]) {
    throw new ProblemError("validation", "If-Match must be one quoted revision, as the ETag header gave it", {
      errors: [
        {
          path: "If-Match",
          message: `expected a quoted revision such as "3" (no list, no W/, no *), got ${JSON.stringify((ifMatch ?? "").slice(0, 80))}`,
        },
      ],
    });
  }
  return quoted[1];
}

/** The dotted path of the first string (or key) in `value` with an unpaired surrogate. */
function unpairedSurrogateAt(value: unknown, path = ""): string | undefined {
  if (typeof value === "string") return UNPAIRED_SURROGATE.test(value) ? path : undefined;
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (UNPAIRED_SURROGATE.test(key)) return at;
    const found = unpairedSurrogateAt(item, at);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** "term: expected ...; holder: expected ..." for a problem's detail (at most three fields). */
function describeIssues(errors: FieldIssue[]): string {
  const shown = errors.slice(0, 3).map((e) => (e.path ? `${e.path}: ${e.message}` : e.message));
  return shown.join("; ") + (errors.length > 3 ? `; and ${errors.length - 3} more (see errors)` : "");
}

function toProblem(error: unknown): ProblemError {
  if (error instanceof ProblemError) return error;
  const e = error as {
    name?: string;
    message?: string;
    issues?: Array<{ path: string; message: string }>;
    status?: number;
  };
  if (e.name === "LeaseValidationError") {
    return new ProblemError("validation", e.message ?? "invalid request", { errors: e.issues ?? [] });
  }
  // Hono's own HTTPException (e.g. a body that is not JSON) carries a 4xx status.
  if (e.status === 400 || e instanceof SyntaxError) {
    return new ProblemError("validation", "the body is not valid JSON", {
      errors: [{ path: "", message: "expected a JSON object" }],
    });
  }
  if (e.status === 405) return new ProblemError("method-not-allowed", e.message ?? "method not allowed");
  return new ProblemError("internal", "unexpected server error");
}
