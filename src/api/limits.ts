/**
 * The bounds on what one caller can make this server hold or do (docs/security.md, "Bounds"),
 * beside the body size and the page size: watch streams per token and in total, new records per
 * token prefix (a quota) and per minute. Over a bound the request is refused before it costs
 * anything more: 429 (the caller's own bound) or 503 (the server's), with `Retry-After` and a
 * problem naming the bound. Counters live in this instance's memory, one entry per token at most,
 * so they cannot grow with what callers send. Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import type { Listed } from "../lease.js";
import { ProblemError } from "./problems.js";

export interface Bounds {
  /** Open watch streams of one token (or of everyone, without tokens). */
  watchStreamsPerToken: number;
  /** Open watch streams of this instance. */
  watchStreams: number;
  /** Records under one token prefix a create may bring the count to. */
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

/**
 * New records: at most `createsPerMinute` per caller (a token bucket that refills continuously),
 * and a create may not bring the records under the caller's prefix past `recordsPerPrefix`.
 * The count comes from a listing bounded at that many, which on an object store reads every
 * record: so it is taken at most once per `RECOUNT_MS` per prefix, this instance's creates are added
 * to it in between, and it is taken again whenever the next create would reach the bound (so the
 * refusal itself is always exact for this instance; other instances' creates are seen at the next
 * count). Released records count until deleted (docs/security.md says how).
 */
export class RecordQuota {
  /** A prefix's count is listed again after this long (ms), or when a create would reach the bound. */
  static readonly RECOUNT_MS = 60_000;
  /** Prefixes whose count is remembered; the oldest is forgotten first (and listed again when needed). */
  static readonly PREFIXES_REMEMBERED = 10_000;
  private readonly buckets = new Map<CallerKey, { tokens: number; at: number }>();
  private readonly counts = new Map<string, { count: number; at: number }>();

  constructor(
    private readonly bounds: Pick<Bounds, "recordsPerPrefix" | "createsPerMinute">,
    private readonly clock: Clock,
    private readonly list: ((prefix: string, limit: number) => AsyncIterable<Listed>) | undefined,
  ) {}

  /** Refuses (429) a create by `caller` of a record under `prefix`, or lets it through. */
  async admitCreate(caller: CallerKey, prefix: string): Promise<void> {
    this.take(caller);
    if (!this.list) return; // a store that cannot list cannot count: documented
    const limit = this.bounds.recordsPerPrefix;
    const now = this.clock.now();
    let counted = this.counts.get(prefix);
    if (!counted || now - counted.at >= RecordQuota.RECOUNT_MS || counted.count + 1 >= limit) {
      let count = 0;
      for await (const _ of this.list(prefix, limit)) count++;
      counted = { count, at: now };
      this.counts.delete(prefix);
      this.counts.set(prefix, counted);
      if (this.counts.size > RecordQuota.PREFIXES_REMEMBERED) {
        this.counts.delete(this.counts.keys().next().value as string);
      }
    }
    if (counted.count >= limit) {
      throw overLimit(
        "recordsPerPrefix",
        `${prefix === "" ? "this server" : `the prefix "${prefix}"`} already holds ${limit} records, the most one token prefix may (recordsPerPrefix): delete released records nobody needs (docs/security.md)`,
        60,
      );
    }
    counted.count++; // this create, until the next listing counts it
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
