/**
 * 405 Method Not Allowed with `Allow` (RFC 9110 §15.5.6): a request whose path the server knows
 * but whose method it does not serve there. The table is the app's own routes, read when the
 * first request arrives (after every route is registered), so it cannot drift from what is served.
 * HEAD is allowed wherever GET is (Hono answers it with the GET handler, without the body).
 */
import type { MiddlewareHandler } from "hono";
import { ProblemError } from "./problems.js";

interface RouteEntry {
  method: string;
  path: string;
}

interface PathMethods {
  pattern: RegExp;
  methods: Set<string>;
}

/** Hono's "/v1/leases/:name/watch" as a pattern matching one raw path segment per parameter. */
function pathPattern(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}$`);
}

function table(routes: readonly RouteEntry[]): PathMethods[] {
  const byPath = new Map<string, Set<string>>();
  for (const { method, path } of routes) {
    // Middleware is registered for every method ("ALL") or for wildcard paths: not a route.
    if (method === "ALL" || path.includes("*")) continue;
    const methods = byPath.get(path) ?? new Set<string>();
    methods.add(method);
    if (method === "GET") methods.add("HEAD");
    byPath.set(path, methods);
  }
  return [...byPath].map(([path, methods]) => ({ pattern: pathPattern(path), methods }));
}

export function methodNotAllowed(routes: () => readonly RouteEntry[]): MiddlewareHandler {
  let paths: PathMethods[] | undefined;
  return async (c, next) => {
    paths ??= table(routes());
    const matching = paths.filter((p) => p.pattern.test(c.req.path));
    if (matching.length > 0 && !matching.some((p) => p.methods.has(c.req.method))) {
      const allow = [...new Set(matching.flatMap((p) => [...p.methods]))].sort().join(", ");
      throw new ProblemError("method-not-allowed", `${c.req.method} is not served here; use ${allow}`, { allow });
    }
    await next();
  };
}
