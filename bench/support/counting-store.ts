/**
 * A store wrapper that counts every call by the role its caller had when it made the call
 * (leader or follower), and optionally records put latencies. One wrapper per candidate, all
 * around one shared inner store, so each count belongs to exactly one candidate.
 */
import type { CallOptions, LeaseRecord, LeaseStore, Revision, Stored } from "../../src/lease.js";
import { StoreWrapper } from "../../src/testkit/store-wrapper.js";

export type Role = "leader" | "follower";

export interface RoleCounts {
  get: number;
  put: number;
  /** Watch streams opened (each is one long-lived request, not one per change). */
  watch: number;
}

export const emptyCounts = (): RoleCounts => ({ get: 0, put: 0, watch: 0 });

export class CountingStore extends StoreWrapper {
  readonly counts: Record<Role, RoleCounts> = { leader: emptyCounts(), follower: emptyCounts() };
  /** Milliseconds per put, when `recordLatency` is set. */
  readonly putLatencies: number[] = [];
  private counting = true;

  constructor(
    inner: LeaseStore,
    /** Asked at each call: the caller's role right now. */
    private readonly role: () => Role,
    private readonly recordLatency = false,
  ) {
    super(inner);
  }

  protected override watchOf(name: string, signal: AbortSignal): AsyncIterable<Stored | null> {
    this.count("watch");
    return super.watchOf(name, signal);
  }

  /** Zeroes the counts and keeps counting: call it once the warm-up (first election) is over. */
  reset(): void {
    this.counts.leader = emptyCounts();
    this.counts.follower = emptyCounts();
    this.putLatencies.length = 0;
    this.counting = true;
  }

  /** Stops counting (the calls of stop() and release are not steady-state cost). */
  freeze(): void {
    this.counting = false;
  }

  override get(name: string, options?: CallOptions): Promise<Stored | null> {
    this.count("get");
    return this.inner.get(name, options);
  }

  override async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    this.count("put");
    if (!this.recordLatency) return this.inner.put(next, expected, options);
    const t0 = performance.now();
    try {
      return await this.inner.put(next, expected, options);
    } finally {
      this.putLatencies.push(performance.now() - t0);
    }
  }

  private count(op: keyof RoleCounts): void {
    if (this.counting) this.counts[this.role()][op]++;
  }
}
