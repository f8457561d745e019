/**
 * How the API answers what went wrong (RFC 9457 problem+json, src/api/problems.ts): a route that
 * does not exist (404), and whatever a route threw. A 5xx is logged (but 501
 * streaming-unavailable, a deployment's answer by design); the current record rides along in a
 * refusal only for a token that may read it. A request whose client left before its body arrived
 * is the client's doing, not a server error: 400 bad-request, never logged or counted as a 5xx
 * (one run of aborted uploads used to log 900 lines). Runtime-neutral.
 */
import type { Authorizer } from "./auth.js";
import type { Api } from "./context.js";
import { type ApiLogger, failureFields } from "./log.js";
import { ProblemError, problemAnswer, toProblem } from "./problems.js";

export function answerProblems(app: Api, auth: Authorizer, log: ApiLogger): void {
  app.notFound(() => {
    throw new ProblemError("not-found", "no such route (lease names are URL-encoded: adapters%2Fbilling)");
  });

  app.onError((error, c) => {
    let p = toProblem(error);
    if (p.kind === "internal" && clientLeft(c.req.raw, error)) {
      p = new ProblemError("bad-request", "the request ended before its body did: the client closed the connection");
    }
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
    const answer = problemAnswer(p);
    return c.body(answer.body, answer.status as 400, answer.headers);
  });
}

/**
 * Did the client leave before its request's body arrived? The runtime says so by aborting the
 * request's signal (the Node server does when the connection closes), or the body's stream fails
 * as Node's does on an aborted upload (`aborted`, ECONNRESET: a store's reset is a LeaseStoreError).
 */
function clientLeft(request: Request, error: unknown): boolean {
  if (request.signal?.aborted) return true;
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === "ECONNRESET" && e.message === "aborted";
}
