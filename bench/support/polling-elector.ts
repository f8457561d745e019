/**
 * The comparison baseline: a small, faithful port of client-go's leader election
 * (k8s.io/client-go/tools/leaderelection, `LeaderElector`) onto the same `LeaseStore`, so the
 * benchmarks compare algorithms, not backends. Used only by the benchmarks.
 *
 * What is kept from client-go, on purpose:
 * - acquire: `wait.JitterUntil(tryAcquireOrRenew, RetryPeriod, JitterFactor = 1.2, sliding)`:
 *   every candidate reads the record every `retryMs * (1 + 1.2 * random)` until it wins;
 * - renew: `wait.Until(PollImmediateUntil(RetryPeriod, tryAcquireOrRenew, RenewDeadline), RetryPeriod)`:
 *   the leader writes every `retryMs`, retrying every `retryMs` until `renewDeadlineMs`, then gives up;
 * - the leader's fast path (an optimistic update on the revision it last wrote, no read), and the
 *   slow path (read, then update) when that fails;
 * - observed time: whenever the raw record differs from the last one seen, `observedTime = now`;
 *   a follower takes over only once `observedTime + leaseDuration < now`;
 * - release on cancel: an update with an empty holder (and a 1 s lease), which any candidate may
 *   take at its next poll.
 * Field mapping: HolderIdentity = holder ("" = null), RenewTime = renewedAt, LeaseDurationSeconds =
 * leaseMs, LeaderTransitions = term, resourceVersion = revision.
 */
import { systemClock } from "../../src/clock.js";
import { type LeaseRecord, type LeaseStore, newWriteId, type Stored } from "../../src/lease.js";

export interface PollingElectorOptions {
  store: LeaseStore;
  name: string;
  identity: string;
  /** client-go LeaseDuration. */
  leaseMs: number;
  /** client-go RenewDeadline: how long the leader keeps retrying a renewal before it steps down. */
  renewDeadlineMs: number;
  /** client-go RetryPeriod: the poll period of followers and the renewal period of the leader. */
  retryMs: number;
  /** client-go's JitterFactor (a package constant, 1.2). */
  jitterFactor?: number;
}

export interface PollingElectorEvents {
  elected?: (term: number) => void;
  deposed?: (term: number) => void;
}

export class PollingElector {
  readonly identity: string;
  readonly events: PollingElectorEvents = {};
  private readonly o: Required<PollingElectorOptions>;
  private observed: LeaseRecord | null = null;
  private observedRaw = "";
  private observedAt = 0;
  /** The lock's resourceVersion: from the last read or successful write. */
  private revision: string | null = null;
  /** Monotonic time the last successful write was sent (what a follower's lease clock can lag behind). */
  lastWriteSentAt: number | undefined;
  private readonly cancel = new AbortController();
  private loop: Promise<void> | undefined;
  private releaseOnCancel = true;

  constructor(options: PollingElectorOptions) {
    this.o = { jitterFactor: 1.2, ...options };
    this.identity = options.identity;
  }

  get isLeader(): boolean {
    return this.observed?.holder === this.identity;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** `release: false` models a crash: the loop ends and nothing more is written. */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.releaseOnCancel = options.release ?? true;
    this.cancel.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { retryMs, jitterFactor, renewDeadlineMs } = this.o;
    const stopped = this.cancel.signal;
    // acquire(): JitterUntil, sliding: the wait starts after each attempt.
    while (!stopped.aborted) {
      if (await this.tryAcquireOrRenew()) break;
      await systemClock.sleep(retryMs * (1 + jitterFactor * Math.random()), stopped);
    }
    if (stopped.aborted) return;
    const term = this.observed?.term ?? 0;
    this.events.elected?.(term);
    // renew(): each round polls immediately, then every retryMs, until success or RenewDeadline.
    while (!stopped.aborted) {
      const deadline = performance.now() + renewDeadlineMs;
      let renewed = false;
      while (!stopped.aborted) {
        if (await this.tryAcquireOrRenew()) {
          renewed = true;
          break;
        }
        if (performance.now() + retryMs >= deadline) break;
        await systemClock.sleep(retryMs, stopped);
      }
      if (stopped.aborted) break;
      if (!renewed) {
        this.events.deposed?.(term);
        return;
      }
      await systemClock.sleep(retryMs, stopped);
    }
    if (this.releaseOnCancel) await this.release();
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = performance.now();
    const wall = Date.now();
    const mine = (transitions: number, acquiredAt: number): LeaseRecord => ({
      name: this.o.name,
      holder: this.identity,
      term: transitions,
      leaseMs: this.o.leaseMs,
      acquiredAt,
      renewedAt: wall,
      metadata: {},
      writeId: newWriteId(),
    });
    // 1. Fast path: the leader updates optimistically on the revision it last wrote.
    if (this.isLeader && this.isLeaseValid(now) && this.observed) {
      const ok = await this.update(mine(this.observed.term, this.observed.acquiredAt));
      if (ok) return true;
    }
    // 2. Read (or create) the record.
    let current: Stored | null;
    try {
      current = await this.o.store.get(this.o.name);
    } catch {
      return false;
    }
    if (!current) {
      this.revision = null;
      return this.update(mine(1, wall));
    }
    this.revision = current.revision;
    // 3. Observed time moves only when the record's bytes change.
    const raw = JSON.stringify(current.record);
    if (raw !== this.observedRaw) this.setObserved(current.record, raw);
    if (current.record.holder !== null && this.isLeaseValid(now) && !this.isLeader) return false;
    // 4. Take over (or renew on the slow path).
    const r = current.record;
    return this.update(this.isLeader ? mine(r.term, r.acquiredAt) : mine(r.term + 1, wall));
  }

  /** Lock.Update: a CAS on the lock's resourceVersion; on success the written record is observed. */
  private async update(next: LeaseRecord): Promise<boolean> {
    const sentAt = performance.now();
    try {
      const stored = await this.o.store.put(next, this.revision);
      this.lastWriteSentAt = sentAt;
      this.revision = stored.revision;
      this.setObserved(stored.record, JSON.stringify(stored.record));
      return true;
    } catch {
      return false;
    }
  }

  private async release(): Promise<void> {
    if (!this.isLeader || !this.observed) return;
    await this.update({
      ...this.observed,
      holder: null,
      leaseMs: 1000,
      renewedAt: Date.now(),
      acquiredAt: Date.now(),
      writeId: newWriteId(),
    });
  }

  private isLeaseValid(now: number): boolean {
    return this.observed !== null && this.observedAt + this.observed.leaseMs > now;
  }

  private setObserved(record: LeaseRecord, raw: string): void {
    this.observed = record;
    this.observedRaw = raw;
    this.observedAt = performance.now();
  }
}
