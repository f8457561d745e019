/**
 * The buckets a sharded elector works on now, one tenure each (docs/sharding.md). A tenure's signal
 * aborts the moment it ends; the work registered for it is what a bucket given away waits for. A
 * bucket is quiet once its last ended tenure's work has returned or `graceMs` has passed: a
 * hand-off, a release or stop writes the bucket away only then, so the next owner never overlaps
 * this one's shutdown. Whether a tenure may start is the elector's decision; this keeps them.
 *
 * Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import type { Emitter } from "../elector/events.js";
import type { SessionCore } from "../elector/session-core.js";
import { BucketLostError, type RevokeReason } from "../errors.js";
import type { BucketInfo } from "./layout.js";
import type { AssignedKind, ShardedElectorEvents } from "./sharded-types.js";

/** The reason for aborting internal timers: a plain value, so no DOMException (and stack) is built each time. */
const DONE = "done";

interface Tenure {
  bucket: number;
  term: number;
  session: number;
  controller: AbortController;
  work: Set<Promise<unknown>>;
}

export interface TenureSettings {
  clock: Clock;
  graceMs: number;
  session: SessionCore;
  events: Emitter<ShardedElectorEvents>;
  /** After a tenure ended: the elector plans again. */
  onEnded: () => void;
}

export class Tenures {
  private readonly running = new Map<number, Tenure>();
  private readonly endedTerms = new Map<number, number>();
  /** Per bucket: resolves once the last ended tenure's work returned or its grace passed. */
  private readonly quietBy = new Map<number, Promise<void>>();

  constructor(private readonly s: TenureSettings) {}

  get size(): number {
    return this.running.size;
  }

  has(bucket: number): boolean {
    return this.running.has(bucket);
  }

  /** Each running tenure's term, by bucket. */
  terms(): Map<number, number> {
    return new Map([...this.running].map(([i, t]) => [i, t.term]));
  }

  /** The running tenures, by bucket. */
  held(): Array<{ bucket: number; term: number }> {
    return [...this.running.values()]
      .map((t) => ({ bucket: t.bucket, term: t.term }))
      .sort((a, b) => a.bucket - b.bucket);
  }

  /** Per bucket, the highest term whose tenure has ended: never started again. */
  get lastEnded(): ReadonlyMap<number, number> {
    return this.endedTerms;
  }

  /** Starts a tenure on `info`, which the elector checked names us under `session`, and says so. */
  start(info: BucketInfo, buckets: number, session: number, kind: AssignedKind): void {
    const tenure: Tenure = {
      bucket: info.index,
      term: info.term,
      session,
      controller: new AbortController(),
      work: new Set(),
    };
    this.running.set(info.index, tenure);
    this.s.events.emit("assigned", {
      bucket: info.index,
      buckets,
      term: info.term,
      record: info.stored.record,
      signal: tenure.controller.signal,
      stillLeader: () => this.stillLeader(tenure),
      kind,
    });
  }

  end(bucket: number, reason: RevokeReason): void {
    const t = this.running.get(bucket);
    if (!t) return;
    this.running.delete(bucket);
    this.endedTerms.set(bucket, Math.max(this.endedTerms.get(bucket) ?? 0, t.term));
    const before = this.quietBy.get(bucket) ?? Promise.resolve();
    this.quietBy.set(
      bucket,
      Promise.all([before, this.withinGrace(Promise.all([...t.work]))]).then(() => undefined),
    );
    t.controller.abort(new BucketLostError(bucket, t.term, reason));
    this.s.events.emit("revoked", { bucket, term: t.term, reason });
    this.s.onEnded();
  }

  endAll(reason: RevokeReason): void {
    for (const bucket of [...this.running.keys()]) this.end(bucket, reason);
  }

  /** Registers a tenure's work (see `ShardedElector.trackWork`). */
  track(bucket: number, term: number, work: Promise<unknown>): void {
    const t = this.running.get(bucket);
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    if (t && t.term === term) {
      t.work.add(settled);
      void settled.then(() => t.work.delete(settled));
    } else {
      // Already ended: whoever gives the bucket away next still waits for it.
      const before = this.quietBy.get(bucket) ?? Promise.resolve();
      this.quietBy.set(
        bucket,
        Promise.all([before, this.withinGrace(settled)]).then(() => undefined),
      );
    }
  }

  /** Resolves once `bucket`'s ended tenures' work returned or its grace passed (undefined: none ended). */
  quiet(bucket: number): Promise<void> | undefined {
    return this.quietBy.get(bucket);
  }

  /** Resolves once every bucket is quiet. */
  allQuiet(): Promise<unknown> {
    return Promise.all([...this.quietBy.values()]);
  }

  private stillLeader(t: Tenure): boolean {
    if (this.running.get(t.bucket) !== t || t.controller.signal.aborted) return false;
    return this.s.session.validTerm() === t.session && this.running.get(t.bucket) === t;
  }

  private withinGrace(work: Promise<unknown>): Promise<void> {
    const grace = new AbortController();
    return Promise.race([work.then(() => undefined), this.s.clock.sleep(this.s.graceMs, grace.signal)]).then(() =>
      grace.abort(DONE),
    );
  }
}
