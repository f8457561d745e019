/**
 * The service routes: /healthz (open: it says only that the process serves), /metrics (with tokens,
 * only for a token with the `metrics` verb: route names, counts and latencies are not for
 * everyone), and /openapi.json, the contract, built once from the same schemas the routes validate
 * with (src/api/openapi.ts). Runtime-neutral.
 */
import type { MiddlewareHandler } from "hono";
import type { Api, Deps, Env } from "../context.js";
import { authenticate } from "../middleware.js";
import { documentParts, PROMETHEUS_TEXT, withSchemas } from "../openapi.js";
import { ProblemError } from "../problems.js";

export function registerOpsRoutes(app: Api, deps: Deps): void {
  const { routes, auth, metrics } = deps;
  app.openAPIRegistry.registerPath(routes.health);
  app.get("/healthz", async (c) => c.json({ ok: true }));

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
