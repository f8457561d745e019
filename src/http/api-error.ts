/**
 * The HTTP client's error (src/http/client.ts), beside the wire schemas its problem body comes
 * from; it is a `LeaseholdError` like every other (src/errors.ts, whose `isLeaseholdError` knows
 * its name), kept out of that module so errors.ts imports no schema (no import circle).
 * Runtime-neutral.
 */
import { LeaseholdError, named } from "../errors.js";
import type { ProblemView } from "./schemas.js";

/**
 * Thrown by the HTTP client when the API answered with a problem (RFC 9457; `problem` is its
 * body), or when the request got no answer at all (`status` 0: unreachable, timed out).
 */
export class LeaseholdApiError extends LeaseholdError {
  override name = "LeaseholdApiError";
  /** The answer's `Retry-After`, in seconds, when it had one (429, 503, a 409 for a lease still held). */
  readonly retryAfter: number | undefined;
  constructor(
    readonly status: number,
    readonly problem: ProblemView | undefined,
    message: string,
    options?: { cause?: unknown; retryAfter?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.retryAfter = options?.retryAfter;
  }
}

export const isLeaseholdApiError = (error: unknown): error is LeaseholdApiError => named(error, ["LeaseholdApiError"]);
