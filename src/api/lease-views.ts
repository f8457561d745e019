/**
 * What a record looks like to callers, by the server's rule: free once `renewedAt + leaseMs +
 * maxSkewMs` has passed on this instance's wall clock (docs/design.md §3), a bucket of a sharded
 * group held while its owner's session lives (src/api/group-records.ts), a bound lease while the
 * process session it names does (src/api/bound-leases.ts), and the view without the server's
 * reserved metadata. Reads made here (a group's config, a bucket owner's session) go to
 * the store and nowhere else: they are not published to the watch hub. So the watch streams,
 * which judge records when the hub tells them of a change, never call back into what publishes
 * to the hub (docs/design.md §5, "One way"). Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { isAmbiguous, isLeaseCorruptError, isLeaseValidationError } from "../errors.js";
import type { LeaseView } from "../http/schemas.js";
import { callerMetadata, type LeaseRecord, type LeaseStore, type Stored } from "../lease.js";
import { memberName } from "../sharding/layout.js";
import { boundSession, boundState } from "./bound-leases.js";
import { type BucketState, GroupRecords, groupShape } from "./group-records.js";
import { ProblemError } from "./problems.js";

/** A record as callers see it (`held`: its session's state, for a bucket or a bound lease); no reserved key. */
export function toView(stored: Stored, held?: BucketState): LeaseView {
  const r = stored.record;
  return {
    name: r.name,
    holder: r.holder,
    term: r.term,
    leaseMs: r.leaseMs,
    acquiredAt: r.acquiredAt,
    renewedAt: r.renewedAt,
    expiresAt: held?.expiresAt ?? r.renewedAt + r.leaseMs,
    metadata: callerMetadata(r.metadata),
    writeId: r.writeId,
    ...(r.fire ? { fire: r.fire } : {}),
    revision: stored.revision,
  };
}

/**
 * A store failure as a problem. The detail never carries the backend's own message: it can name
 * files, buckets, endpoints or SDK internals that are not the client's business.
 */
export function storeProblem(op: string, error: unknown): ProblemError {
  if (error instanceof ProblemError) return error;
  if (isLeaseValidationError(error)) {
    return new ProblemError("validation", error.message, { errors: error.issues });
  }
  if (isLeaseCorruptError(error)) return new ProblemError("corrupt", error.message);
  const outcome = isAmbiguous(error) ? "; a write may or may not have applied, and is settled by reading" : "";
  return new ProblemError("store-unavailable", `the store failed during ${op}${outcome}; retry`, { retryAfter: 1 });
}

export class LeaseViews {
  /** Recognises the records of sharded groups, and a bucket's real state. */
  readonly groups: GroupRecords;

  constructor(
    /** The API's (metered) store. */
    private readonly store: LeaseStore,
    private readonly clock: Clock,
    readonly maxSkewMs: number,
  ) {
    this.groups = new GroupRecords(
      (name) => this.read(name),
      (record) => this.isFree(record),
    );
  }

  /** Free when released, or when no instance could still consider it held (skew bound included). */
  isFree(record: LeaseRecord, wallNow = this.clock.wallNow()): boolean {
    return record.holder === null || wallNow > record.renewedAt + record.leaseMs + this.maxSkewMs;
  }

  /** When this server will first consider `record` free (ms from `wallNow`; 0 when it is already). */
  freeInMs(record: LeaseRecord, wallNow = this.clock.wallNow()): number {
    if (record.holder === null) return 0;
    return Math.max(0, record.renewedAt + record.leaseMs + this.maxSkewMs - wallNow + 1);
  }

  /** The record as callers see it, a bucket or a bound lease with its session's state. */
  async view(stored: Stored, cache?: Map<string, Promise<Stored | null>>): Promise<LeaseView> {
    return toView(stored, await this.held(stored, cache));
  }

  /** Whether `stored` is free and until when it is held, a bucket or a bound lease by its session. */
  async state(stored: Stored, cache?: Map<string, Promise<Stored | null>>): Promise<BucketState> {
    const held = await this.held(stored, cache);
    return held ?? { free: this.isFree(stored.record), expiresAt: stored.record.renewedAt + stored.record.leaseMs };
  }

  /**
   * The state of a record held by a session (a bucket by its owner's, a bound lease by its
   * process session's), `undefined` for any other record. `cache` shares reads between calls.
   */
  async held(stored: Stored, cache = new Map<string, Promise<Stored | null>>()): Promise<BucketState | undefined> {
    const bucket = await this.groups.bucketState(stored, cache);
    if (bucket) return bucket;
    const ref = boundSession(stored.record);
    if (!ref) return undefined;
    let session = cache.get(ref.name);
    if (!session) {
      session = this.read(ref.name);
      cache.set(ref.name, session);
    }
    return boundState(stored.record, (await session)?.record, (r) => this.isFree(r));
  }

  /** The session record a held record's state follows (a bucket's owner's, a bound lease's), if any. */
  sessionOf(stored: Stored | null): string | undefined {
    if (!stored || stored.record.holder === null) return undefined;
    const shape = groupShape(stored.record.name);
    if (shape?.kind === "bucket") return memberName(shape.group, stored.record.holder);
    return boundSession(stored.record)?.name;
  }

  /** One read, not published (see the module comment). */
  private async read(name: string): Promise<Stored | null> {
    try {
      return await this.store.get(name);
    } catch (error) {
      throw storeProblem("get", error);
    }
  }
}
