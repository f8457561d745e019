/**
 * The request checks every route shares, in the order docs/design.md §5 gives: the method (405,
 * src/api/methods.ts), the Host of a server without tokens (403), who is asking (401), the body's
 * type (415) and size (413), admission (503, src/api/admission.ts); then per route the name and the token's scope (400, 403), the body's
 * text (I-JSON, 400), and only then its fields (the route's zod schema, 400). Runtime-neutral.
 */
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { UNPAIRED_SURROGATE } from "../lease.js";
import { type Admission, laneOf } from "./admission.js";
import type { Authorizer, Verb } from "./auth.js";
import { allow, type Deps, type Env } from "./context.js";
import type { ApiMetrics } from "./metrics.js";
import { ProblemError } from "./problems.js";

/** Counts every answer by route, method and status. */
export function countRequests(metrics: ApiMetrics): MiddlewareHandler<Env> {
  return async (c, next) => {
    c.set("route", c.req.routePath);
    await next();
    metrics.requests.inc({ route: c.req.routePath, method: c.req.method, status: String(c.res.status) });
  };
}

/**
 * A server without tokens on loopback serves only requests addressed to loopback: a browser page
 * on another site can point a name it controls at 127.0.0.1 (DNS rebinding), but it cannot make
 * the browser send a loopback Host.
 */
const LOOPBACK_HOST = /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])(:\d{1,5})?$/i;

export function loopbackHostsOnly(): MiddlewareHandler<Env> {
  return async (c, next) => {
    const host = c.req.header("host") ?? new URL(c.req.url).host;
    if (!LOOPBACK_HOST.test(host)) {
      throw new ProblemError(
        "host-not-allowed",
        `this server runs without tokens on loopback and serves only Host localhost, 127.x.x.x or [::1] (got ${JSON.stringify(host.slice(0, 64))}): set LEASEHOLD_TOKENS to serve other names`,
      );
    }
    await next();
  };
}

/** 401 unless `Authorization` names a known token (or auth is off); sets the principal. */
export function authenticate(auth: Authorizer): MiddlewareHandler<Env> {
  return async (c, next) => {
    const result = await auth.authenticate(c.req.header("authorization"));
    if (!result.ok) throw new ProblemError("unauthorized", result.detail);
    c.set("principal", result.value);
    await next();
  };
}

/** POST and PUT bodies: application/json (415), at most `bytes` long (413). */
export function jsonBodies(bytes: number): MiddlewareHandler<Env> {
  const limit = bodyLimit({
    maxSize: bytes,
    onError: () => {
      throw new ProblemError("payload-too-large", `the body must be at most ${bytes} bytes`);
    },
  });
  return async (c, next) => {
    if (c.req.method !== "POST" && c.req.method !== "PUT") return next();
    const type = c.req.header("content-type") ?? "";
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      throw new ProblemError(
        "unsupported-media-type",
        `send Content-Type: application/json (got ${type ? JSON.stringify(type.slice(0, 64)) : "none"})`,
      );
    }
    return limit(c, next);
  };
}

/**
 * Admits the request in its lane (src/api/admission.ts) or answers 503 over-capacity; the
 * request counts as in flight until its answer is ready (a stream's body then runs on its own).
 */
export function admitted(admission: Admission): MiddlewareHandler<Env> {
  return async (c, next) => {
    const request = {
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      header: (name: string) => c.req.header(name),
      body: () => c.req.json() as Promise<unknown>,
    };
    const lane = await laneOf(request, admission.holdings);
    const ticket = admission.admit(lane);
    c.set("renewalsOnly", ticket.renewalsOnly);
    try {
      await next();
    } finally {
      ticket.done();
    }
  };
}

/**
 * Runs before the route's validators: a token outside its scope is 403 whatever the body says.
 * `nameOf` validates the name (400) from the path.
 */
export function scoped(deps: Deps, verb: Verb, nameOf: (c: Parameters<MiddlewareHandler<Env>>[0]) => string) {
  const check: MiddlewareHandler<Env> = async (c, next) => {
    allow(deps, c, verb, nameOf(c));
    await next();
  };
  return check;
}

/**
 * A listing (or a stream of one) of the prefix `prefixOf` validates (400): 403 unless the token
 * may read every name such a listing can return (src/api/auth.ts `authorizeListing`).
 */
export function listingScoped(deps: Deps, prefixOf: (c: Parameters<MiddlewareHandler<Env>>[0]) => string) {
  const check: MiddlewareHandler<Env> = async (c, next) => {
    const checked = deps.auth.authorizeListing(c.get("principal"), prefixOf(c));
    if (!checked.ok) throw new ProblemError("forbidden", checked.detail);
    await next();
  };
  return check;
}

/**
 * I-JSON (RFC 7493): a string with an unpaired surrogate is not Unicode text, and a store that
 * writes UTF-8 would change it. And a key `__proto__`, which JSON carries but no JavaScript object
 * keeps as data (a schema never sees it: it was dropped without a word). Each refused wherever it
 * is, naming where, before the fields are validated.
 */
export const wellFormed: MiddlewareHandler<Env> = async (c, next) => {
  const found = illFormedAt(await c.req.json());
  if (found !== undefined) {
    throw new ProblemError("validation", `invalid request: ${found.path || "body"}: ${found.message}`, {
      errors: [found],
    });
  }
  await next();
};

const SURROGATE = "expected no unpaired surrogates (request bodies are I-JSON, RFC 7493)";
const PROTO = 'expected no key "__proto__" (no JavaScript object keeps it as data)';

/** The dotted path of the first string (or key) in `value` with an unpaired surrogate, or key `__proto__`. */
function illFormedAt(value: unknown, path = ""): { path: string; message: string } | undefined {
  if (typeof value === "string") return UNPAIRED_SURROGATE.test(value) ? { path, message: SURROGATE } : undefined;
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (UNPAIRED_SURROGATE.test(key)) return { path: at, message: SURROGATE };
    if (key === "__proto__") return { path: at, message: PROTO };
    const found = illFormedAt(item, at);
    if (found !== undefined) return found;
  }
  return undefined;
}
