/**
 * What a failed HTTP request to an object store (GCS, S3, Azure Blob) tells about its effect: the
 * rules those stores share, so they classify a failure alike. The one write path
 * (src/elector/cas.ts) resolves whatever stays ambiguous.
 */
import { isLeaseStoreError } from "../../errors.js";

/** Statuses after which a write may have applied: the server may have written before failing. */
const AMBIGUOUS_STATUS = new Set([408, 429, 500, 502, 503, 504]);
/** Connection errors raised before any byte of the request left this machine. */
const NEVER_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ERR_INVALID_URL"]);

/**
 * True when one attempt of a write certainly did not apply: the server refused it with a 4xx other
 * than a timeout or throttling answer (`status`), or, with no answer, the request never left this
 * machine (`code`). Anything else may have applied. (A client that retried may still have applied
 * an earlier attempt: the caller adds that.)
 */
export function writeRefused(status: number | undefined, code: string): boolean {
  return status !== undefined ? status >= 400 && status < 500 && !AMBIGUOUS_STATUS.has(status) : NEVER_SENT.has(code);
}

/**
 * Runs `read`, and once more when it failed with a LeaseStoreError caused by a connection reset
 * before any answer (`isConnectionReset`), unless `signal` has aborted. Reads only: a read changes
 * nothing, while a write's outcome after a reset is unknown and is resolved by the write path.
 */
export async function readWithOneRetryOnReset<T>(read: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (signal?.aborted || !isLeaseStoreError(error) || !isConnectionReset(error.cause)) throw error;
    return read();
  }
}

/**
 * A request whose connection broke before any answer came (no status; a reset or a closed
 * socket): most often a kept-alive socket the server had just closed, the race every HTTP client
 * with keep-alive meets.
 */
export function isConnectionReset(error: unknown): boolean {
  const e = error as { code?: unknown; statusCode?: unknown; $metadata?: { httpStatusCode?: unknown } } | null;
  if (e === null || typeof e !== "object") return false;
  const answered = e.statusCode !== undefined || e.$metadata?.httpStatusCode !== undefined;
  return !answered && (e.code === "ECONNRESET" || e.code === "EPIPE");
}
