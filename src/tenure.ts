/**
 * "Is this tenure over, and when will it be?" (docs/design.md §3): the one place that answers it,
 * for the library's candidates and sessions, the server's views and holding rules, the console,
 * the sharded members, and (by the same vectors, test/vectors/tenure.json) the Go client.
 *
 * A **tenure** is one term of one record held by one holder: a process session's term, a member's
 * session, or the term of a lease that renews itself. Three ways to know it has ended:
 *
 * - **Over for good** (`tenureOver`): the record shows a later term, or the same term released
 *   (holder null). Terms only grow and a released term is never renewed again, so this is stable:
 *   seen once, true for ever, whatever clock or listing showed it.
 * - **By its stamps** (`freeByStamps`, the stateless rule the API judges by): released, or
 *   `renewedAt + leaseMs + maxSkewMs` is past on this wall clock, `maxSkewMs` bounding how far the
 *   writer's clock may be from this one. The only use of wall clocks; a candidate uses it only to
 *   skip waiting out a record already stale (client-go #448).
 * - **By observed time** (`expiresAt`): a held record whose revision has stayed the same for its
 *   `leaseMs` on this process's monotonic clock since this process first saw it (client-go's rule):
 *   the holder sent the write that made it before it was first seen, so its own window
 *   (`sentAt + leaseMs - safetyMs`) closed before then. Only clock rates matter. A takeover after
 *   it is a compare-and-swap on exactly the revision observed, which proves nothing changed since.
 *
 * Pure and runtime-neutral: plain numbers in, a verdict out.
 */

/** What the rules read of a record. */
export interface TenureRecord {
  holder: string | null;
  term: number;
  leaseMs: number;
  renewedAt: number;
}

/** One term of a record held by `holder` (a session tenure, or a self-renewing lease's term). */
export interface Tenure {
  holder: string;
  term: number;
}

/** Over for good: `record` shows a later term than `tenure`'s, or the same term released. */
export function tenureOver(tenure: Tenure, record: Pick<TenureRecord, "holder" | "term">): boolean {
  return record.term > tenure.term || (record.term === tenure.term && record.holder === null);
}

/**
 * The stateless rule on an expiry instant (a record's `renewedAt + leaseMs`, or that of the session
 * it rides on): past it by more than `maxSkewMs` on this wall clock, so no clock within the bound of
 * the writer's counts it held.
 */
export function pastExpiry(expiresAt: number, wallNow: number, maxSkewMs: number): boolean {
  return wallNow > expiresAt + maxSkewMs;
}

/** In how many ms `pastExpiry` turns true (0 when it already is; the bound plus 1 ms). */
export function msUntilPast(expiresAt: number, wallNow: number, maxSkewMs: number): number {
  return Math.max(0, expiresAt + maxSkewMs - wallNow + 1);
}

/** The stateless rule for a record: released, or past `renewedAt + leaseMs + maxSkewMs` on `wallNow`. */
export function freeByStamps(record: TenureRecord, wallNow: number, maxSkewMs: number): boolean {
  return record.holder === null || pastExpiry(record.renewedAt + record.leaseMs, wallNow, maxSkewMs);
}

/** In how many ms `freeByStamps` turns true (0 when it already is). */
export function freeInMs(record: TenureRecord, wallNow: number, maxSkewMs: number): number {
  return record.holder === null ? 0 : msUntilPast(record.renewedAt + record.leaseMs, wallNow, maxSkewMs);
}

/**
 * Observed time: the monotonic instant a held `record`, first seen (this revision) at `firstSeen`,
 * expires unless its revision changes: `firstSeen + leaseMs`, or `firstSeen` itself when it is
 * already stale by its stamps.
 */
export function expiresAt(record: TenureRecord, firstSeen: number, wallNow: number, maxSkewMs: number): number {
  return freeByStamps(record, wallNow, maxSkewMs) ? firstSeen : firstSeen + record.leaseMs;
}

/**
 * A record held under another record's tenure (a bound lease under its process session, a bucket
 * under its owner's member session), as the server judges it from the two records alone: held while
 * that session record still shows `tenure` and is not free by its stamps, its expiry the session's;
 * otherwise free, from when that tenure ended.
 */
export function heldUnder(
  tenure: Tenure,
  own: TenureRecord,
  session: TenureRecord | undefined,
  wallNow: number,
  maxSkewMs: number,
): { expiresAt: number; free: boolean } {
  if (session && session.holder === tenure.holder && session.term === tenure.term) {
    return { expiresAt: session.renewedAt + session.leaseMs, free: freeByStamps(session, wallNow, maxSkewMs) };
  }
  // The session tenure it rode on is over (released, fenced, a later term) or never was.
  const ownEnd = own.renewedAt + own.leaseMs;
  return { expiresAt: Math.min(ownEnd, session ? session.renewedAt : ownEnd), free: true };
}

/** What one observation says of a tenure: over (take what it held), expired (fence it first), or live until. */
export type Verdict = { kind: "over" } | { kind: "expired" } | { kind: "live"; until: number };

export interface Seen {
  /** The record as read (null: none exists). */
  record: TenureRecord | null;
  /** Monotonic instant this revision (or this absence) was first seen. */
  firstSeen: number;
}

/**
 * The verdict on a tenure from what was seen of its record, at monotonic `now`:
 *
 * - `tenure` given (a lease names the session tenure it rides on): over once the record shows it
 *   over; a record missing or older than the tenure (replaced outside leasehold) cannot be renewed
 *   by its holder, so once that has stood for `fallbackMs` it is over too; otherwise the record's
 *   own expiry decides.
 * - No `tenure` (a record judged on its own: a self-renewing lease, a session record a process
 *   wants to establish): missing or released is over; otherwise its expiry decides.
 *
 * `expired` means by observed time (or by stamps): what held it may not be renewed any more, but
 * nothing proves that yet: a compare-and-swap on exactly the revision observed does.
 */
export function judge(
  tenure: Tenure | undefined,
  seen: Seen,
  clocks: { now: number; wallNow: number; maxSkewMs: number; fallbackMs: number },
): Verdict {
  const r = seen.record;
  if (tenure === undefined) {
    if (!r || r.holder === null) return { kind: "over" };
  } else {
    if (r && tenureOver(tenure, r)) return { kind: "over" };
    if (!r || r.term < tenure.term) {
      const until = seen.firstSeen + clocks.fallbackMs;
      return clocks.now >= until ? { kind: "over" } : { kind: "live", until };
    }
  }
  const until = expiresAt(r!, seen.firstSeen, clocks.wallNow, clocks.maxSkewMs);
  return clocks.now >= until ? { kind: "expired" } : { kind: "live", until };
}
