/**
 * What a record looks like to callers, by the server's rule: free once `renewedAt + leaseMs +
 * maxSkewMs` has passed on this instance's wall clock (docs/design.md §3), a bucket of a sharded
 * group held while its owner's session lives (src/api/group-records.ts), a bound lease while the
 * process session it names does (src/api/bound-leases.ts), and the view without the server's
 * own proofs (the instance digests). Reads made here (a group's config, a bucket owner's session) go to
 * the store and nowhere else: they are not published to the watch hub. So the watch streams,
 * which judge records when the hub tells them of a change, never call back into what publishes
 * to the hub (docs/design.md §5, "One way"). Runtime-neutral.
 */

import type { Clock } from "../clock.js";
import { isAmbiguous, isLeaseCorruptError, isLeaseValidationError } from "../errors.js";
import { leaseView } from "../http/lease-view.js";
import type { LeaseView, UnreadableLeaseView } from "../http/schemas.js";
import type { LeaseRecord, LeaseStore, Stored } from "../lease.js";
import { isUnreadable, type Listed, type Unreadable } from "../listing.js";
import { memberName } from "../sharding/layout.js";
import { freeByStamps, freeInMs } from "../tenure.js";
import { boundSession, boundState } from "./bound-leases.js";
import { type BucketState, GroupRecords, groupShape } from "./group-records.js";
import { OwnWrites } from "./own-writes.js";
import { ProblemError } from "./problems.js";

/** A record as callers see it (`held`: its session's state, for a bucket or a bound lease); no instance proof. */
export function toView(stored: Stored, held?: BucketState): LeaseView {
  return leaseView(stored, held?.expiresAt);
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
  if (isLeaseCorruptError(error)) {
    return new ProblemError("corrupt", `${error.message}. ${CLEAR_HINT}`, { errors: error.issues });
  }
  const outcome = isAmbiguous(error) ? "; a write may or may not have applied, and is settled by reading" : "";
  return new ProblemError("store-unavailable", `the store failed during ${op}${outcome}; retry`, { retryAfter: 1 });
}

/** How an operator clears a record the server cannot read or judge (docs/cli.md). */
const CLEAR_HINT =
  "An operator with a token that has the verb force clears it: leasehold release --force NAME (POST /v1/leases/{name}/force-release)";

/** A listing's row for a record the store could not read. */
export function corruptRow(entry: Unreadable): UnreadableLeaseView {
  return { name: entry.name, reason: "corrupt", detail: entry.unreadable.message, errors: entry.unreadable.issues };
}

/**
 * Whether `error`, thrown while judging a record that reads, says the record cannot be judged
 * (what it names is not a name, or is itself unreadable) rather than that the store failed.
 */
export function isJudgementFailure(error: unknown): error is ProblemError {
  return error instanceof ProblemError && (error.kind === "validation" || error.kind === "corrupt");
}

/** A listing's row for a record that reads but cannot be judged, from the judgement's problem. */
export function unjudgeableRow(name: string, problem: ProblemError): UnreadableLeaseView {
  return {
    name,
    reason: "unjudgeable",
    detail: `lease "${name}" cannot be judged: ${problem.detail}`,
    errors: problem.extra.errors ?? [],
  };
}

/** GET of a record the server cannot judge: a problem naming why (never the 400 of a bad request). */
export function unreadableProblem(row: UnreadableLeaseView): ProblemError {
  return new ProblemError("corrupt", `${row.detail}. ${CLEAR_HINT}`, { errors: row.errors });
}

export class LeaseViews {
  /** Recognises the records of sharded groups, and a bucket's real state. */
  readonly groups: GroupRecords;
  /** The records this instance wrote itself, judged on its own clock. */
  readonly ownWrites: OwnWrites;

  constructor(
    /** The API's (metered) store. */
    private readonly store: LeaseStore,
    private readonly clock: Clock,
    readonly maxSkewMs: number,
  ) {
    this.ownWrites = new OwnWrites(clock);
    this.groups = new GroupRecords((name) => this.read(name), clock, maxSkewMs);
  }

  /** Free when released, or when no instance could still consider it held (skew bound included). */
  isFree(record: LeaseRecord, wallNow = this.clock.wallNow()): boolean {
    return freeByStamps(record, wallNow, this.maxSkewMs);
  }

  /** When this server will first consider `record` free (ms from `wallNow`; 0 when it is already). */
  freeInMs(record: LeaseRecord, wallNow = this.clock.wallNow()): number {
    return freeInMs(record, wallNow, this.maxSkewMs);
  }

  /**
   * Whether a plain lease is free now and, held, in how long it will be: by this instance's own
   * clock when it wrote the current revision itself (./own-writes.ts), else by the record's stamps.
   */
  freeState(stored: Stored, wallNow = this.clock.wallNow()): { free: boolean; freeInMs: number } {
    const stamps = this.freeInMs(stored.record, wallNow);
    const own = this.ownWrites.freeInMs(stored);
    const freeInMs = own === undefined ? stamps : Math.min(own, stamps);
    return { free: freeInMs === 0, freeInMs };
  }

  /** The record as callers see it, a bucket or a bound lease with its session's state. */
  async view(stored: Stored, cache?: Map<string, Promise<Stored | null>>): Promise<LeaseView> {
    return toView(stored, await this.held(stored, cache));
  }

  /**
   * A listing's row: the view of a record, or why the server cannot read it or judge it (a
   * store failure while judging is thrown: it is no fault of the record's).
   */
  async row(
    entry: Listed,
    cache?: Map<string, Promise<Stored | null>>,
  ): Promise<{ lease: LeaseView } | { unreadable: UnreadableLeaseView }> {
    if (isUnreadable(entry)) return { unreadable: corruptRow(entry) };
    try {
      return { lease: await this.view(entry, cache) };
    } catch (error) {
      if (!isJudgementFailure(error)) throw error;
      return { unreadable: unjudgeableRow(entry.record.name, error) };
    }
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
    return boundState(stored.record, (await session)?.record, this.clock.wallNow(), this.maxSkewMs);
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
