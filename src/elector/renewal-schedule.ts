/**
 * A leader's renewal schedule, in one place (docs/partitions.md, "The renewal schedule"): how long
 * one renewal attempt may take, and when a failed one is sent again. The rules, so that one slow
 * call never costs the lease and a partition shorter than the documented bound is survived:
 *
 * - An attempt may take `callTimeoutMs`, and never past the window's end.
 * - The default `callTimeoutMs` (`defaultCallTimeoutMs`) is at most half of what is left of the
 *   window when a renewal is due (`leaseMs - safetyMs - renewMs`): two whole attempts fit, so a
 *   latency just under the call timeout that makes one attempt time out leaves a second with the
 *   whole timeout. (It was `renewMs`: with the default proportions the retry after one timeout had
 *   about a tenth of the lease, and latency of 0.96 × the call timeout caused needless failovers.)
 * - An attempt that used up its timeout is sent again at once (the wait was the back-off), so
 *   renewals go on back to back through a blackholed link; one that failed fast (a refused or
 *   reset connection, a 5xx) is sent again after the jittered `retryMs`, but never later than
 *   the instant that still leaves a whole attempt before the window closes.
 *
 * Pure functions of monotonic instants. Runtime-neutral.
 */

/** The default call timeout: `renewMs`, but at most half of `leaseMs - safetyMs - renewMs`. */
export function defaultCallTimeoutMs(leaseMs: number, safetyMs: number, renewMs: number): number {
  return Math.max(1, Math.min(renewMs, Math.floor((leaseMs - safetyMs - renewMs) / 2)));
}

/** How long a renewal attempt sent at `now` may take, for a window that closes at `until`. */
export function renewalTimeoutMs(now: number, until: number, callTimeoutMs: number): number {
  return Math.max(0, Math.min(callTimeoutMs, until - now));
}

/**
 * When to send a renewal again after the attempt sent at `sentAt` with `timeoutMs` failed at
 * `failedAt`: at once when it used up its timeout; after `backoffMs` otherwise, but no later than
 * `until - callTimeoutMs` while that is still ahead (one whole attempt still fits), and never
 * past `until`.
 */
export function renewalRetryAt(o: {
  sentAt: number;
  failedAt: number;
  timeoutMs: number;
  until: number;
  callTimeoutMs: number;
  backoffMs: number;
}): number {
  if (o.failedAt - o.sentAt >= o.timeoutMs) return o.failedAt;
  const latest = o.until - o.callTimeoutMs;
  const at = o.failedAt + o.backoffMs;
  return Math.min(latest > o.failedAt ? Math.min(at, latest) : at, o.until);
}
