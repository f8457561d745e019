/**
 * The bounds on what one caller can make this server hold or do (docs/security.md, "Bounds"),
 * beside the body size and the page size: watch streams per token and in total, new records per
 * token prefix (a quota) and per minute. Over a bound the request is refused before it costs
 * anything more: 429 (the caller's own bound) or 503 (the server's), with `Retry-After` and a
 * problem naming the bound. Counters live in this instance's memory, one entry per token at most,
 * so they cannot grow with what callers send. Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { CasWriter } from "../elector/cas.js";
import type { LeaseStore } from "../lease.js";
import type { TokenScope } from "./auth.js";
import { ProblemError } from "./problems.js";
import { countOf, type QuotaOwner, quotaOwner, quotaRecord, quotaRecordName } from "./quota-records.js";

export interface Bounds {
  /** Open watch streams of one token (or of everyone, without tokens). */
  watchStreamsPerToken: number;
  /** Open watch streams of this instance. */
  watchStreams: number;
  /** Records one token may create under one of its prefixes (a count kept in the store). */
  recordsPerPrefix: number;
  /** New records one token may create per minute (a create also counts its prefix's records). */
  createsPerMinute: number;
}

/** Who is counted: a token's scope object, or one key for everyone when auth is off. */
export type CallerKey = object;

export const EVERYONE: CallerKey = Object.freeze({ everyone: true });

function overLimit(bound: keyof Bounds | "connections", detail: string, retryAfter: number, server = false) {
  return new ProblemError(server ? "over-capacity" : "over-limit", detail, { bound, retryAfter });
}

/** Open watch streams: per caller and in total. */
export class WatchStreams {
  private readonly perCaller = new Map<CallerKey, number>();
  private total = 0;

  constructor(private readonly bounds: Pick<Bounds, "watchStreams" | "watchStreamsPerToken">) {}

  /** Counts one more stream of `caller`, or throws 429/503 naming the bound; returns its release. */
  open(caller: CallerKey): () => void {
    const mine = this.perCaller.get(caller) ?? 0;
    if (mine >= this.bounds.watchStreamsPerToken) {
      throw overLimit(
        "watchStreamsPerToken",
        `this token has ${mine} watch streams open, the most one token may (watchStreamsPerToken); close one first`,
        5,
      );
    }
    if (this.total >= this.bounds.watchStreams) {
      throw overLimit(
        "watchStreams",
        `this server has ${this.total} watch streams open, the most it serves (watchStreams); retry later`,
        5,
        true,
      );
    }
    this.perCaller.set(caller, mine + 1);
    this.total++;
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      this.total--;
      const left = (this.perCaller.get(caller) ?? 1) - 1;
      if (left === 0) this.perCaller.delete(caller);
      else this.perCaller.set(caller, left);
    };
  }

  /** Streams open now (for tests and metrics). */
  get count(): { total: number; callers: number } {
    return { total: this.total, callers: this.perCaller.size };
  }
}

/** What this instance knows of one count: creates it reserved and has not used, and whether the count is spent. */
interface QuotaEntry {
  reserved: number;
  /** The count reached the bound with this instance's last reservation. */
  full: boolean;
  /** When the count was seen at the bound (with nothing reserved left). */
  atBoundSince?: number;
}

/**
 * New records: at most `createsPerMinute` per caller (a token bucket that refills continuously,
 * per instance), and at most `recordsPerPrefix` created by one token under one of its prefixes
 * (docs/security.md, "Bounds"). That count is kept in the store (./quota-records.ts), so every
 * replica and every restart sees it, and it is maintained, never recounted by listing:
 *
 * - an instance reserves up to `RESERVE` creates at a time with one compare-and-swap on the count
 *   (never past the bound), and hands them out from memory; a reservation it never uses (a restart,
 *   a create that lost its race) stays counted: the count only errs upwards, which refuses, and
 *   never lets more than the bound through, however many replicas share the store;
 * - a count at the bound is remembered for `AT_BOUND_RECHECK_MS`, so a refusal then costs no store
 *   call at all (the route's own read of the lease aside); after that it is read again, once;
 * - each token's count is its own: a narrower token's creates never use a wider one's quota.
 *
 * What it does not count: records created before the counts existed (an upgrade from 0.1), and
 * records written or deleted with the store's own credentials. Released records count until an
 * operator deletes them and the count record with them (docs/security.md says how).
 */
export class RecordQuota {
  /** Creates one count write reserves for this instance (GCS allows about one write a second to one object). */
  static readonly RESERVE = 16;
  /** A count seen at the bound is believed this long before it is read again (ms). */
  static readonly AT_BOUND_RECHECK_MS = 60_000;
  /** Counts this instance keeps reservations and refusals for; the least recently used is dropped first (its reservation stays counted). */
  static readonly COUNTS_REMEMBERED = 10_000;
  /** Compare-and-swaps on one count before a create is answered 503 (other replicas took the revision each time). */
  static readonly ATTEMPTS = 8;
  private readonly buckets = new Map<CallerKey, { tokens: number; at: number }>();
  /** Per count record: creates reserved and not yet used, or when the count was seen at the bound. */
  private readonly counts = new Map<string, QuotaEntry>();
  /** One reservation per count at a time in this instance, so its own requests never race each other. */
  private readonly pending = new Map<string, Promise<void>>();

  constructor(
    private readonly bounds: Pick<Bounds, "recordsPerPrefix" | "createsPerMinute">,
    private readonly clock: Clock,
    /** The API's (metered) store, where the counts live. */
    private readonly store: LeaseStore,
  ) {}

  /** Refuses (429) a create by `caller` of a record under its token prefix `prefix`, or counts it. */
  async admitCreate(caller: CallerKey, prefix: string): Promise<void> {
    this.take(caller);
    // A store that is another API (the HTTP store) counts this server's creates itself.
    if (this.store.limits?.serverRecords === false) return;
    const owner = await quotaOwner(caller === EVERYONE ? undefined : (caller as TokenScope));
    const name = await quotaRecordName(owner, prefix);
    for (;;) {
      const entry = this.entry(name);
      if (entry.reserved > 0) {
        entry.reserved--;
        // Its last reservation took the count to the bound: the next create is refused unread.
        if (entry.reserved === 0 && entry.full) entry.atBoundSince = this.clock.now();
        return;
      }
      if (entry.atBoundSince !== undefined && this.clock.now() - entry.atBoundSince < RecordQuota.AT_BOUND_RECHECK_MS) {
        throw this.refusal(prefix);
      }
      const inFlight = this.pending.get(name);
      if (inFlight) {
        await inFlight.catch(() => undefined);
        continue;
      }
      const reserving = this.reserve(name, owner, prefix, entry);
      this.pending.set(name, reserving);
      try {
        await reserving;
      } finally {
        this.pending.delete(name);
      }
    }
  }

  /** Counts at the bound or with reservations this instance remembers (for tests and metrics). */
  get remembered(): number {
    return this.counts.size;
  }

  private entry(name: string): QuotaEntry {
    let entry = this.counts.get(name);
    if (entry) {
      this.counts.delete(name);
    } else {
      entry = { reserved: 0, full: false };
      if (this.counts.size >= RecordQuota.COUNTS_REMEMBERED)
        this.counts.delete(this.counts.keys().next().value as string);
    }
    this.counts.set(name, entry); // most recently used last
    return entry;
  }

  /** One compare-and-swap on the count: up to RESERVE creates for this instance, or the count at the bound. */
  private async reserve(name: string, owner: QuotaOwner, prefix: string, entry: QuotaEntry): Promise<void> {
    const limit = this.bounds.recordsPerPrefix;
    const writer = new CasWriter({ store: this.store, name, clock: this.clock });
    let current = await this.store.get(name);
    for (let attempt = 0; attempt < RecordQuota.ATTEMPTS; attempt++) {
      const count = current ? countOf(current.record, limit) : 0;
      const take = Math.min(RecordQuota.RESERVE, limit - count);
      if (take <= 0) {
        entry.atBoundSince = this.clock.now();
        return;
      }
      const next = quotaRecord(name, count + take, owner, prefix, this.clock.wallNow());
      const outcome = await writer.writeSettled(next, current?.revision ?? null);
      if (outcome.kind === "applied") {
        entry.reserved += take;
        entry.full = count + take >= limit;
        delete entry.atBoundSince;
        return;
      }
      current = outcome.current === undefined ? await this.store.get(name) : outcome.current;
    }
    throw new ProblemError("store-unavailable", `the count of records under "${prefix}" changed too often; retry`, {
      retryAfter: 1,
    });
  }

  private refusal(prefix: string): ProblemError {
    const limit = this.bounds.recordsPerPrefix;
    return overLimit(
      "recordsPerPrefix",
      `this token created ${limit} records under ${prefix === "" ? "its prefix" : `"${prefix}"`}, the most one token may under one prefix (recordsPerPrefix): an operator deletes released records nobody needs and resets the count (docs/security.md)`,
      60,
    );
  }

  private take(caller: CallerKey): void {
    const rate = this.bounds.createsPerMinute;
    const now = this.clock.now();
    const b = this.buckets.get(caller) ?? { tokens: rate, at: now };
    b.tokens = Math.min(rate, b.tokens + ((now - b.at) * rate) / 60_000);
    b.at = now;
    if (b.tokens < 1) {
      const wait = Math.ceil(((1 - b.tokens) * 60_000) / rate / 1000);
      this.buckets.set(caller, b);
      throw overLimit(
        "createsPerMinute",
        `this token created ${rate} records in the last minute, the most it may (createsPerMinute)`,
        wait,
      );
    }
    b.tokens -= 1;
    this.buckets.set(caller, b);
  }
}
