/**
 * The leasehold HTTP API (docs/design.md §5): `createApp({ store, auth, clock, limits })` returns a
 * Hono app; runtimes only wire it (src/runtime/*). Routes under /v1, problem+json errors
 * (RFC 9457), bearer tokens scoped to lease prefixes, OpenAPI generated from the zod schemas.
 * Lease names contain "/", so clients URL-encode them in paths (adapters%2Fbilling).
 */
import { createRoute, OpenAPIHono, type z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { streamSSE } from "hono/streaming";
import { type Clock, systemClock } from "../clock.js";
import {
  AcquireBody,
  LeaseList,
  LeaseResult,
  Lease as LeaseSchema,
  ListQuery,
  NameParam,
  Problem,
  RecordBody,
  TermBody,
} from "../http/schemas.js";
import type { LeaseStore, Stored } from "../lease.js";
import { validateName, zodIssues } from "../lease.js";
import { type AuthConfig, Authorizer, type Verb } from "./auth.js";
import { LeaseService, toView } from "./lease-service.js";
import { ApiMetrics } from "./metrics.js";
import { resolveAppOptions } from "./options.js";
import { PROBLEM_TYPE, ProblemError } from "./problems.js";
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
}

type Env = { Variables: { route: string } };

const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { "application/json": { schema } },
  description,
});
const problem = (description: string) => ({ content: { [PROBLEM_TYPE]: { schema: Problem } }, description });
const body = <T extends z.ZodType>(schema: T) => ({
  body: { content: { "application/json": { schema } }, required: true },
});
const security = [{ bearer: [] }];

const errorResponses = {
  400: problem("Invalid name, body or query: `errors` lists each failing field"),
  401: problem("Missing or unknown bearer token"),
  403: problem("Token outside its scope"),
  415: problem("Body is not application/json"),
  503: problem("Store unavailable or write outcome unknown: retry after Retry-After"),
};

const routes = {
  acquire: createRoute({
    method: "post",
    path: "/v1/leases/{name}/acquire",
    summary: "Acquire when free or expired; the current holder calling it renews",
    security,
    request: { params: NameParam, ...body(AcquireBody) },
    responses: {
      200: json(LeaseResult, "This holder leads"),
      409: problem("Held by another holder: `lease`"),
      ...errorResponses,
    },
  }),
  renew: createRoute({
    method: "post",
    path: "/v1/leases/{name}/renew",
    summary: "Renew a held lease",
    security,
    request: { params: NameParam, ...body(TermBody) },
    responses: {
      200: json(LeaseResult, "Renewed"),
      404: problem("The lease never existed"),
      409: problem("Lost: another holder, the term moved on, or it expired"),
      ...errorResponses,
    },
  }),
  release: createRoute({
    method: "post",
    path: "/v1/leases/{name}/release",
    summary: "Release (idempotent for the same holder and term); the term is kept",
    security,
    request: { params: NameParam, ...body(TermBody) },
    responses: {
      200: json(LeaseResult, "Released"),
      404: problem("The lease never existed"),
      409: problem("Not this holder's term"),
      ...errorResponses,
    },
  }),
  get: createRoute({
    method: "get",
    path: "/v1/leases/{name}",
    summary: "Read one lease (strongly consistent)",
    security,
    request: { params: NameParam },
    responses: {
      200: json(LeaseSchema, "The lease; ETag is its revision"),
      404: problem("Never existed"),
      ...errorResponses,
    },
  }),
  put: createRoute({
    method: "put",
    path: "/v1/leases/{name}",
    summary: 'Raw compare-and-swap (used by the HTTP store): If-Match: "<revision>" or If-None-Match: *',
    security,
    request: { params: NameParam, ...body(RecordBody.extend({ acquiredAt: LeaseSchema.shape.acquiredAt })) },
    responses: {
      200: json(LeaseSchema, "Written"),
      201: json(LeaseSchema, "Created"),
      409: problem(
        "The write breaks a term rule (`rule` names it, `lease` is the current record); nothing was written",
      ),
      412: problem("Revision not current: `lease` is the current record"),
      428: problem("Neither If-Match nor If-None-Match"),
      ...errorResponses,
    },
  }),
  list: createRoute({
    method: "get",
    path: "/v1/leases",
    summary: "List leases by prefix, in name order",
    security,
    request: { query: ListQuery },
    responses: { 200: json(LeaseList, "One page; `next` is the cursor of the next"), ...errorResponses },
  }),
};

export function createApp(options: AppOptions): OpenAPIHono<Env> {
  // Bounds, defaults and messages: src/api/options.ts.
  const { bodyBytes, listLimit, maxSkewMs, watchPollMs, heartbeatMs } = resolveAppOptions(options);
  const clock = options.clock ?? systemClock;
  const auth = new Authorizer(options.auth);
  const metrics = new ApiMetrics();
  // The hub's polling read goes through the service, so it is timed and published like any read.
  let service: LeaseService;
  const hub = new WatchHub(options.store, clock, watchPollMs, (name) => service.get(name));
  service = new LeaseService(options.store, clock, maxSkewMs, metrics, hub);

  const app = new OpenAPIHono<Env>({
    defaultHook: (result) => {
      if (!result.success) {
        throw new ProblemError("validation", "the request does not match the API schema", {
          errors: zodIssues(result.error as z.ZodError),
        });
      }
    },
  });

  app.use("*", async (c, next) => {
    c.set("route", c.req.routePath);
    await next();
    metrics.requests.inc({ route: c.req.routePath, method: c.req.method, status: String(c.res.status) });
  });

  app.use(
    "/v1/*",
    bodyLimit({
      maxSize: bodyBytes,
      onError: () => {
        throw new ProblemError("payload-too-large", `the body must be at most ${bodyBytes} bytes`);
      },
    }),
  );

  app.use("/v1/*", async (c, next) => {
    if (c.req.method === "POST" || c.req.method === "PUT") {
      const type = c.req.header("content-type") ?? "";
      if (!/^application\/json\s*(;|$)/i.test(type)) {
        throw new ProblemError(
          "unsupported-media-type",
          `send Content-Type: application/json (got ${type ? JSON.stringify(type.slice(0, 64)) : "none"})`,
        );
      }
    }
    await next();
  });

  const leaseName = (c: Context) => validateName(c.req.param("name"));
  const authorize = async (c: Context, verb: Verb, lease: string) => {
    const result = await auth.check(c.req.header("authorization"), verb, lease);
    if (!result.ok) throw new ProblemError(result.status === 401 ? "unauthorized" : "forbidden", result.detail);
  };
  const leaseResult = (c: Context, outcome: { leader: boolean; stored: Stored }) =>
    c.json({ leader: outcome.leader, lease: toView(outcome.stored) }, 200, { ETag: `"${outcome.stored.revision}"` });

  app.openapi(routes.acquire, async (c) => {
    const name = leaseName(c);
    await authorize(c, "write", name);
    return leaseResult(c, await service.acquire(name, c.req.valid("json")));
  });

  app.openapi(routes.renew, async (c) => {
    const name = leaseName(c);
    await authorize(c, "write", name);
    return leaseResult(c, await service.renew(name, c.req.valid("json")));
  });

  app.openapi(routes.release, async (c) => {
    const name = leaseName(c);
    await authorize(c, "write", name);
    return leaseResult(c, await service.release(name, c.req.valid("json")));
  });

  app.openapi(routes.get, async (c) => {
    const name = leaseName(c);
    await authorize(c, "read", name);
    const stored = await service.get(name);
    if (!stored) throw new ProblemError("not-found", `lease "${name}" does not exist`);
    return c.json(toView(stored), 200, { ETag: `"${stored.revision}"` });
  });

  app.openapi(routes.put, async (c) => {
    const name = leaseName(c);
    await authorize(c, "write", name);
    const expected = expectedRevision(c.req.header("if-match"), c.req.header("if-none-match"));
    if (expected !== null) service.checkRevision("If-Match", expected);
    const stored = await service.put(name, c.req.valid("json"), expected);
    return c.json(toView(stored), expected === null ? 201 : 200, { ETag: `"${stored.revision}"` });
  });

  app.openapi(routes.list, async (c) => {
    const query = c.req.valid("query");
    const prefix = query.prefix ?? "";
    await authorize(c, "read", prefix);
    const limit = Math.min(query.limit ?? 100, listLimit);
    const leases = [];
    for await (const stored of service.list(prefix, query.cursor, limit + 1)) leases.push(toView(stored));
    const more = leases.length > limit;
    const page = leases.slice(0, limit);
    return c.json({ leases: page, next: more ? (page[page.length - 1]?.name ?? null) : null }, 200);
  });

  // Server-Sent Events: "lease" events with { lease, free }, the current state first, then every
  // change this instance makes or sees, a "free" event at the instant the lease expires
  // unrenewed, and keep-alive comments. Across instances: changes made elsewhere arrive within
  // watchPollMs (or at once, when the store pushes); see WatchHub.
  app.get("/v1/leases/:name/watch", async (c) => {
    const name = leaseName(c);
    await authorize(c, "read", name);
    const first = await service.get(name);
    metrics.watchers.inc();
    return streamSSE(c, async (stream) => {
      const done = new AbortController();
      stream.onAbort(() => done.abort());
      let lastRevision: string | undefined;
      let expiryTimer = new AbortController();
      const send = async (stored: Stored | null, force = false) => {
        const revision = stored?.revision ?? "none";
        if (!force && revision === lastRevision) return;
        lastRevision = revision;
        const free = stored === null || service.isFree(stored.record);
        await stream.writeSSE({
          event: "lease",
          id: revision,
          data: JSON.stringify({ lease: stored ? toView(stored) : null, free }),
        });
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

  app.get("/healthz", async (c) => c.json({ ok: true }));
  app.get("/metrics", (c) =>
    c.text(metrics.render(), 200, { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" }),
  );

  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: { title: "leasehold", version: "1", description: "Leader election leases over compare-and-swap storage" },
  });

  app.notFound(() => {
    throw new ProblemError("not-found", "no such route (lease names are URL-encoded: adapters%2Fbilling)");
  });

  app.onError((error, c) => {
    const p = toProblem(error);
    const headers: Record<string, string> = { "Content-Type": PROBLEM_TYPE };
    if (p.extra.retryAfter !== undefined) headers["Retry-After"] = String(p.extra.retryAfter);
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
  const quoted = /^\s*"([^"\s]{1,64})"\s*$/.exec(ifMatch ?? "");
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
