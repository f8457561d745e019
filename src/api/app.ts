/**
 * The leasehold HTTP API (docs/design.md §5): `createApp(options)` returns a Hono app; runtimes
 * only wire it (src/runtime/*). Built by concern:
 * - the options and their bounds: ./app-options.ts (what a caller passes), ./options.ts (checked);
 * - the services, built once and wired one way: ./services.ts;
 * - the request checks every route shares, in order: ./middleware.ts (admission: ./admission.ts);
 * - the routes by concern: ./routes/ (leases, the raw compare-and-swap, groups, watch, service
 *   routes) and the console's, ./console/;
 * - problem+json answers (RFC 9457) for whatever went wrong: ./answers.ts.
 * The OpenAPI 3.1 document that is the contract is declared in ./openapi.ts from the same zod
 * schemas the routes validate with. Lease names contain "/", so clients URL-encode them in paths
 * (adapters%2Fbilling).
 */
import { OpenAPIHono, type z } from "@hono/zod-openapi";
import { systemClock } from "../clock.js";
import { describeIssues } from "../errors.js";
import { zodIssues } from "../lease.js";
import { answerProblems } from "./answers.js";
import type { AppOptions } from "./app-options.js";
import { Authorizer } from "./auth.js";
import { registerConsole } from "./console/index.js";
import type { Env } from "./context.js";
import { silentLogger } from "./log.js";
import { methodNotAllowed } from "./methods.js";
import { admitted, authenticate, countRequests, jsonBodies, loopbackHostsOnly } from "./middleware.js";
import { resolveAppOptions } from "./options.js";
import { ProblemError } from "./problems.js";
import { requestDeadline } from "./request-deadline.js";
import { registerCasRoute } from "./routes/cas.js";
import { registerGroupRoutes } from "./routes/groups.js";
import { registerLeaseRoutes } from "./routes/leases.js";
import { registerOpsRoutes } from "./routes/ops.js";
import { registerWatchRoute } from "./routes/watch.js";
import { buildDeps } from "./services.js";

export { LatenessProbe } from "../elector/lateness.js";
export type { AdmissionOptions, ApiLimits, AppOptions } from "./app-options.js";
export type { StreamSupport } from "./context.js";

export function createApp(options: AppOptions): OpenAPIHono<Env> {
  // Bounds, defaults and messages: src/api/options.ts.
  const resolved = resolveAppOptions(options);
  const log = options.log ?? silentLogger;
  const auth = new Authorizer(options.auth);
  const deps = buildDeps(options, resolved, auth, options.clock ?? systemClock, log);

  const app = new OpenAPIHono<Env>({
    defaultHook: (result) => {
      if (!result.success) {
        const errors = zodIssues(result.error as z.ZodError);
        throw new ProblemError("validation", `invalid request: ${describeIssues(errors, 3)}`, { errors });
      }
    },
  });

  // Request checks in order, each before anything reads what the next needs (docs/design.md §5).
  app.use("*", countRequests(deps.metrics));
  app.use(
    "*",
    methodNotAllowed(() => app.routes),
  );
  if (options.allowedHosts === "loopback") app.use("*", loopbackHostsOnly());
  app.use("/v1/*", authenticate(auth));
  app.use("/v1/*", requestDeadline(deps.clock));
  app.use("/v1/*", jsonBodies(resolved.bodyBytes));
  if (deps.admission) app.use("/v1/*", admitted(deps.admission));

  registerLeaseRoutes(app, deps);
  registerCasRoute(app, deps);
  registerGroupRoutes(app, deps);
  registerWatchRoute(app, deps);
  registerConsole(app, deps, options.console);
  registerOpsRoutes(app, deps);
  answerProblems(app, auth, log);
  return app;
}
