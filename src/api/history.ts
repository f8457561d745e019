/**
 * The change log behind the console (docs/console.md, "History"): for each lease, the terms this
 * server has seen, newest last, and what ended each one. It is fed by every record the server
 * publishes (its own writes, the reads of its routes, the polls of its watches and console streams:
 * `WatchHub.observe`), so it costs the store nothing, and it lives in this process's memory only:
 * a restart, a new Lambda instance or a new Worker isolate starts with none.
 *
 * What ended a term, from the records alone:
 * - `released`: the record came back with the same term and no holder (at its `renewedAt`);
 * - `taken-over`: the next term began under another holder without a release (at its `acquiredAt`);
 * - `expired`: nothing renewed it and no other holder took it: either the same holder began the
 *   next term, or no newer record has been seen and the server's rule (`renewedAt + leaseMs +
 *   maxSkewMs` passed) says it is free; the instant given is `renewedAt + leaseMs` (for a bucket of
 *   a sharded group, judged by its owner's session, as GET does: src/api/group-records.ts);
 * - `unseen`: the next term this server saw is more than one higher: terms ended and began while
 *   it was not looking.
 *
 * Bounded: `terms` entries per lease (older ones are dropped and counted), `leases` leases in all,
 * shared fairly among tenants (`tenantOf`: the token prefix a name is under): when a new lease
 * needs room, the lease changed least recently is forgotten from the tenant that keeps the most
 * (its own tenant on a tie), so one tenant's churn forgets its own history first and never empties
 * another tenant's that keeps no more than its share. Runtime-neutral.
 */
import type { Stored } from "../lease.js";

export type TermEnd =
  | { kind: "released"; at: number }
  | { kind: "taken-over"; at: number; by: string }
  | { kind: "expired"; at: number }
  | { kind: "unseen"; next: number };

export interface TermEntry {
  term: number;
  /** null: this server first saw the term already released, and never its holder. */
  holder: string | null;
  acquiredAt: number;
  /** The last renewal seen (the release time, once released). */
  renewedAt: number;
  leaseMs: number;
  metadata: Record<string, string>;
  /** When this server first saw the term (its own wall clock). */
  seenAt: number;
  end: TermEnd | null;
}

export interface LeaseHistoryView {
  name: string;
  /** This server's wall clock when it answered. */
  now: number;
  /** When this server's log began (it started): nothing older is known. */
  since: number;
  /** When this server first saw the lease (or saw it again after forgetting it); null: never. */
  firstSeenAt: number | null;
  /** Terms kept per lease (0: history is off). */
  limit: number;
  /** Older terms of this lease dropped to stay within `limit`. */
  dropped: number;
  /** Newest first. */
  terms: TermEntry[];
}

interface Log {
  firstSeenAt: number;
  revision: string;
  terms: TermEntry[];
  dropped: number;
}

export class LeaseHistory {
  private readonly logs = new Map<string, Log>();
  /** Each tenant's leases with history, the one changed least recently first. */
  private readonly tenants = new Map<string, Set<string>>();
  readonly since: number;

  constructor(
    private readonly limits: { terms: number; leases: number },
    private readonly wallNow: () => number,
    /**
     * The server's rule for "no one holds this any more" (LeaseService.isFree; a bucket's owner's
     * session), and when it stops or stopped being held.
     */
    private readonly judge: (stored: Stored) => Promise<{ free: boolean; expiresAt: number }>,
    /** Whose share a lease counts in (src/api/auth.ts `tenantOf`); one share for all by default. */
    private readonly tenantOf: (name: string) => string = () => "",
  ) {
    this.since = wallNow();
  }

  /** Every record the server publishes comes here; a revision already seen costs one map lookup. */
  observe(name: string, stored: Stored | null): void {
    if (this.limits.terms === 0 || stored === null) return;
    const r = stored.record;
    let log = this.logs.get(name);
    if (log?.revision === stored.revision) return;
    // Term 0 was never held (a group's config record): there is no term to tell of.
    if (!log && r.term === 0) return;
    const tenant = this.tenantOf(name);
    if (!log) {
      log = { firstSeenAt: this.wallNow(), revision: stored.revision, terms: [], dropped: 0 };
      if (this.logs.size >= this.limits.leases) this.forgetOne(tenant);
      this.logs.set(name, log);
    }
    const names = this.tenants.get(tenant) ?? new Set<string>();
    this.tenants.set(tenant, names);
    names.delete(name);
    names.add(name); // most recently changed last
    log.revision = stored.revision;

    const last = log.terms.at(-1);
    if (last && r.term === last.term) {
      if (r.holder === null) {
        last.end ??= { kind: "released", at: r.renewedAt };
      } else {
        last.holder = r.holder;
        last.leaseMs = r.leaseMs;
        last.metadata = r.metadata;
      }
      last.renewedAt = r.renewedAt;
      return;
    }
    if (last && !last.end && r.term > last.term) {
      if (r.term > last.term + 1) last.end = { kind: "unseen", next: r.term };
      else if (last.holder !== null && r.holder !== null && r.holder !== last.holder) {
        last.end = { kind: "taken-over", at: r.acquiredAt, by: r.holder };
      } else last.end = { kind: "expired", at: last.renewedAt + last.leaseMs };
    }
    log.terms.push({
      term: r.term,
      holder: r.holder,
      acquiredAt: r.acquiredAt,
      renewedAt: r.renewedAt,
      leaseMs: r.leaseMs,
      metadata: r.metadata,
      seenAt: this.wallNow(),
      end: r.holder === null ? { kind: "released", at: r.renewedAt } : null,
    });
    if (log.terms.length > this.limits.terms) {
      log.terms.shift();
      log.dropped++;
    }
  }

  /** Forgets the lease changed least recently of the tenant keeping the most (`tenant` on a tie). */
  private forgetOne(tenant: string): void {
    let fullest = tenant;
    let most = this.tenants.get(tenant)?.size ?? 0;
    for (const [t, names] of this.tenants) {
      if (names.size > most) {
        fullest = t;
        most = names.size;
      }
    }
    const names = this.tenants.get(fullest);
    const oldest = names?.values().next().value;
    if (names === undefined || oldest === undefined) return;
    names.delete(oldest);
    if (names.size === 0) this.tenants.delete(fullest);
    this.logs.delete(oldest);
  }

  /**
   * What this server knows of `name`; the newest term's expiry is judged now, by the server's rule
   * (which reads a bucket's group config and owner's session, as GET does; nothing else is read).
   */
  async read(name: string): Promise<LeaseHistoryView> {
    const log = this.logs.get(name);
    const terms = (log?.terms ?? []).map((t) => ({ ...t, metadata: { ...t.metadata } })).reverse();
    const newest = terms[0];
    if (newest && !newest.end && newest.holder !== null) {
      const { seenAt: _, end: __, ...fields } = newest;
      const state = await this.judge({ record: { ...fields, name, writeId: "-" }, revision: "" });
      if (state.free) newest.end = { kind: "expired", at: state.expiresAt };
    }
    const now = this.wallNow();
    return {
      name,
      now,
      since: this.since,
      firstSeenAt: log?.firstSeenAt ?? null,
      limit: this.limits.terms,
      dropped: log?.dropped ?? 0,
      terms,
    };
  }

  /** Leases with history now (for tests and /metrics). */
  get size(): number {
    return this.logs.size;
  }
}
