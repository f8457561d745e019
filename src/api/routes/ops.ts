/**
 * The service routes: /healthz (open: it says only that the process serves, whatever the store
 * does), /readyz (open: 503 while the store cannot be reached, src/api/store-deadline.ts), /metrics (with tokens,
 * only for a token with the `metrics` verb: route names, counts and latencies are not for
 * everyone), and /openapi.json, the contract, built once from the same schemas the routes validate
 * with (src/api/openapi.ts). Runtime-neutral.
 */
import type { MiddlewareHandler } from "hono";
import type { Api, Deps, Env } from "../context.js";
import { authenticate } from "../middleware.js";
import { documentParts, PROMETHEUS_TEXT, withSchemas } from "../openapi.js";
import { ProblemError } from "../problems.js";

/** A store answer younger than this says it is reachable without a probe. */
const READY_FRESH_MS = 1000;
/** What /readyz reads when no answer is fresh: a lease name that is only ever read. */
const READY_PROBE = "leasehold/readyz";

export function registerOpsRoutes(app: Api, deps: Deps): void {
  const { routes, auth, metrics } = deps;
  app.openAPIRegistry.registerPath(routes.health);
  app.get("/healthz", async (c) => c.json({ ok: true }));

  // Readiness: a store that answered within the last second is reachable; otherwise one read
  // now, under the store deadline, tells (the probe's name is a plain read, never written).
  app.openAPIRegistry.registerPath(routes.ready);
  app.get("/readyz", async (c) => {
    const health = deps.storeHealth;
    const fresh = health.failingSince === undefined && deps.clock.now() - health.lastAnswer < READY_FRESH_MS;
    if (!fresh) {
      try {
        await deps.store.get(READY_PROBE);
      } catch (error) {
        throw new ProblemError(
          "store-unavailable",
          `the store cannot be reached: ${error instanceof Error ? error.message : String(error)}`,
          { retryAfter: 1 },
        );
      }
    }
    return c.json({ ok: true as const, store: "reachable" as const });
  });

  const scrapers: MiddlewareHandler<Env> = async (c, next) => {
    const checked = auth.authorizeVerb(c.get("principal"), "metrics");
    if (!checked.ok) throw new ProblemError("forbidden", checked.detail);
    await next();
  };
  app.openAPIRegistry.registerPath(routes.metrics);
  app.get("/metrics", authenticate(auth), scrapers, (c) =>
    c.text(metrics.render(), 200, { "Content-Type": PROMETHEUS_TEXT }),
  );

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
}
