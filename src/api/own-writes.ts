/**
 * Records this API instance wrote itself, judged on its own monotonic clock (docs/partitions.md,
 * "Takeover over the API"): a lease whose current revision this instance wrote is free once
 * `leaseMs` has passed on this instance's monotonic clock since that write was sent. The holder
 * it names sent its request before that, so its own window (its send time + leaseMs - safetyMs,
 * on its clock) closed before then: no skew bound is needed, as no other machine's stamp is read.
 * Only a record some other instance wrote (another replica, a restarted one) is judged by
 * `renewedAt + leaseMs + maxSkewMs` against the wall clock (src/api/lease-views.ts). Over the API a
 * failover then takes about `leaseMs`, not `leaseMs + maxSkewMs`.
 *
 * One entry per lease name (its newest write here), at most `capacity` (the oldest forgotten
 * first: a forgotten lease falls back to the skew rule, never to a wrong answer). Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import type { Stored } from "../lease.js";

export class OwnWrites {
  private readonly written = new Map<string, { revision: string; freeAt: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly capacity = 10_000,
  ) {}

  /** `stored` is what a write of this instance sent at `sentAt` (monotonic) produced. */
  note(stored: Stored, sentAt: number): void {
    const name = stored.record.name;
    this.written.delete(name);
    this.written.set(name, { revision: stored.revision, freeAt: sentAt + stored.record.leaseMs });
    for (const oldest of this.written.keys()) {
      if (this.written.size <= this.capacity) break;
      this.written.delete(oldest);
    }
  }

  /** For a held record at a revision this instance wrote: ms until it is free (0: it is); else undefined. */
  freeInMs(stored: Stored): number | undefined {
    const w = this.written.get(stored.record.name);
    if (!w || w.revision !== stored.revision || stored.record.holder === null) return undefined;
    return Math.max(0, Math.ceil(w.freeAt - this.clock.now()));
  }
}
