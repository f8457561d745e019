/**
 * Each request's deadline (docs/partitions.md, "No late effects"): a signal that aborts when the
 * client's own timeout has passed (`Leasehold-Timeout-Ms`, which the HTTP client and the Go
 * client send with every request) or when its connection closes (on runtimes that say so: the
 * Node server does). The routes pass it down to every store call (src/api/store-deadline.ts): a
 * call past it is abandoned, and a write is never sent for a request whose client has gone or
 * given up, so a request held up by a slow store cannot take effect after the fact. A malformed
 * header is a 400 naming it. Runtime-neutral: the injected clock.
 */
import type { MiddlewareHandler } from "hono";
import type { Clock } from "../clock.js";
import { MAX_TIMEOUT_HEADER_MS, TIMEOUT_HEADER } from "../http/schemas.js";
import type { Env } from "./context.js";
import { ProblemError } from "./problems.js";

export function requestDeadline(clock: Clock): MiddlewareHandler<Env> {
  return async (c, next) => {
    const header = c.req.header(TIMEOUT_HEADER);
    let timeoutMs: number | undefined;
    if (header !== undefined) {
      timeoutMs = /^\d{1,7}$/.test(header.trim()) ? Number(header.trim()) : Number.NaN;
      if (!(timeoutMs >= 1 && timeoutMs <= MAX_TIMEOUT_HEADER_MS)) {
        const message = `expected a whole number of milliseconds 1-${MAX_TIMEOUT_HEADER_MS}, got ${JSON.stringify(header)}`;
        throw new ProblemError("validation", `invalid ${TIMEOUT_HEADER} header: ${message}`, {
          errors: [{ path: TIMEOUT_HEADER, message }],
        });
      }
    }
    const deadline = new AbortController();
    const gone = c.req.raw.signal as AbortSignal | undefined;
    const onGone = () => deadline.abort();
    if (gone?.aborted) onGone();
    else gone?.addEventListener("abort", onGone, { once: true });
    const timer = new AbortController();
    if (timeoutMs !== undefined) {
      void clock.sleep(timeoutMs, timer.signal).then(() => {
        if (!timer.signal.aborted) deadline.abort();
      });
    }
    c.set("deadline", deadline.signal);
    try {
      await next();
    } finally {
      timer.abort();
      gone?.removeEventListener("abort", onGone);
    }
  };
}
