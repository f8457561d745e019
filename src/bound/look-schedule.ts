/**
 * When a follower looks again at a live session record its lease is bound to (docs/design.md §4
 * "Reading a bound lease"). The session's owner renews it every `renewMs`; a follower that sees a
 * renewal `d` ms after it was written expires it by observed time `leaseMs + d` after it, so the
 * failover after a crash is as slow as the last renewal was seen late. And a session that counts
 * its releases tells its followers when to read their leases, so its looks are their polls too.
 *
 * - **About once a poll** (`pollMs`), when the record counts its releases (`counts`): for a
 *   release counted. One that does not (an older version's) is looked at only as below, its
 *   leases being polled.
 * - **Snapped to just after a renewal is due** when one is due within half a poll after that: the
 *   record's own stamp (`renewedAt`, the owner's wall clock when it sent the write) plus whole
 *   renewal intervals, plus `marginMs` for the write to land. The owner's interval is not in its
 *   record; it is estimated as `renewShare` of the record's `leaseMs` (the follower's own
 *   proportion: the same by default, 1/3). A wrong estimate or clock only makes looks early or
 *   late, never a verdict wrong: verdicts stand on revisions and this process's monotonic clock
 *   (src/tenure.ts).
 * - **Never closer than 3/4 of a poll**: renewals more frequent than that are skipped (2 s
 *   leases, 1 s polls: every second renewal, 1.33 s apart). A renewal skipped is first seen up to
 *   `renewMs` late, so the failover after a crash is at most `leaseMs + margin` when
 *   `renewMs > 3/4 pollMs`, and else at most `leaseMs` plus the lesser of the renewals skipped
 *   and `maxSkewMs` (the stamps' bound).
 * - **Never later than the tenure could end**: its expiry by observed time (`firstSeen + leaseMs`)
 *   or by its stamps (`renewedAt + leaseMs + maxSkewMs`), the final confirming look.
 *
 * Pure and runtime-neutral.
 */

export interface LookInput {
  /** This process's monotonic and wall clocks now. */
  now: number;
  wallNow: number;
  /** The record as last read: its owner's stamp and lease. */
  renewedAt: number;
  leaseMs: number;
  /** Monotonic: when this revision was first seen, and when the latest read showing it was sent. */
  firstSeen: number;
  readAt: number;
  pollMs: number;
  maxSkewMs: number;
  /** The owner's renewal interval as a share of its lease (renewMs / leaseMs). */
  renewShare: number;
  /** The record counts its releases (`releases`): its looks stand in for its leases' polls. */
  counts: boolean;
}

/** How long after a renewal is due a look is timed, for the write to land: an eighth of the interval, 20-200 ms. */
export function landingMarginMs(renewMs: number): number {
  return Math.min(200, Math.max(20, renewMs / 8));
}

/** The monotonic instant to look at the session record again (see the header). */
export function nextLookAt(o: LookInput): number {
  const toMono = (wall: number) => o.now + (wall - o.wallNow);
  const expiry = Math.min(o.firstSeen + o.leaseMs, toMono(o.renewedAt + o.leaseMs + o.maxSkewMs) + 1);
  const renewMs = o.leaseMs * o.renewShare;
  if (!(renewMs > 0)) return Math.min(expiry, o.readAt + o.pollMs);
  const margin = landingMarginMs(renewMs);
  const notBefore = o.readAt + (o.pollMs * 3) / 4;
  // The first renewal due (and landed) after notBefore: renewedAt + k * renewMs + margin.
  const k = Math.max(1, Math.floor((notBefore - margin - toMono(o.renewedAt)) / renewMs) + 1);
  const snapped = toMono(o.renewedAt + k * renewMs) + margin;
  const poll = o.readAt + o.pollMs;
  return Math.min(expiry, !o.counts || snapped <= poll + o.pollMs / 2 ? snapped : poll);
}
