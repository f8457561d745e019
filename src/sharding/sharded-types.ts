/**
 * The sharded elector's public types (docs/sharding.md): its options, the events it emits and the
 * snapshot `current` returns. `sharded-elector.ts` re-exports them, so they are imported from there
 * as before.
 */
import type { Clock } from "../clock.js";
import type { SessionLossReason } from "../elector/session-core.js";
import type { RevokeReason } from "../errors.js";
import type { LeaseRecord, LeaseStore } from "../lease.js";
import type { ClaimKind } from "./plan.js";

export interface ShardedElectorOptions {
  /** Where the group lives; it must be able to list by prefix. */
  store: LeaseStore;
  /** The group name: its records are `<group>/_config`, `<group>/_members/<id>`, `<group>/_buckets/<i>`. */
  group: string;
  /** The bucket count a new group starts with. An existing group's config record wins (see `reshard`). */
  buckets: number;
  /** This member's id, unique in the group (a-z 0-9 . _ -). Default: a random `m-xxxxxxxx`. */
  identity?: string;
  /** Session lease after each renewal. Default 15000. */
  leaseMs?: number;
  /** Session renewal interval; must be < leaseMs - safetyMs. Default leaseMs / 3. */
  renewMs?: number;
  /** Retry delay, and the poll interval while anything is moving. Default leaseMs / 7.5. */
  retryMs?: number;
  /** The session ends this much before it could expire elsewhere. Default leaseMs / 10. */
  safetyMs?: number;
  /** Retries wait retryMs * (1 + jitter * random). Default 0.2. */
  jitter?: number;
  /** Wall-clock skew bound, for treating a member record stale by its own stamps as expired. Default 1000. */
  maxSkewMs?: number;
  /** Longest a store call may take before it counts as ambiguous. Default renewMs. */
  callTimeoutMs?: number;
  /** How long a bucket's work may take to stop before the bucket is given away anyway. Default leaseMs. */
  graceMs?: number;
  /** How long the view must stay unchanged before buckets held by live members move. Default leaseMs. */
  settleMs?: number;
  /** Poll interval once everything is settled. Default renewMs. */
  pollMs?: number;
  /** The most buckets a member asks for at once. Default ceil(buckets / 8). */
  handoffBatch?: number;
  clock?: Clock;
  random?: () => number;
}

/**
 * How a tenure began: we took a free bucket (`fresh`), a bucket of a session that is over
 * (`takeover`), our own bucket again under a new session (`reestablish`); it was handed to us
 * (`handoff`); or a claim of ours whose outcome was unknown turned out to have landed (`recovered`).
 */
export type AssignedKind = ClaimKind | "handoff" | "recovered";

export interface AssignedEvent {
  bucket: number;
  /** The group's bucket count under which this tenure runs: `bucketOf(key, buckets) === bucket`. */
  buckets: number;
  /** The bucket's fencing token for this tenure. */
  term: number;
  record: LeaseRecord;
  /** Aborts the moment this tenure ends. */
  signal: AbortSignal;
  /** True while this tenure is held and the session's safe window is open, read from the clock now. */
  stillLeader: () => boolean;
  kind: AssignedKind;
}

export interface RevokedEvent {
  bucket: number;
  term: number;
  reason: RevokeReason;
}

export interface ShardedElectorEvents {
  assigned: AssignedEvent;
  revoked: RevokedEvent;
  session: { phase: "established" | "lost"; term: number; reason?: SessionLossReason };
  /** The live view changed (sorted member ids). */
  view: { members: string[] };
  /** We gave `bucket` to `to` at `term` (after its work stopped). */
  handoff: { bucket: number; to: string; term: number };
  /** We took `bucket` from `from`, whose session had expired and been fenced. */
  takeover: { bucket: number; from: string; term: number };
  /** We ended `member`'s expired session. */
  fenced: { member: string; term: number };
  /** After each plan: buckets seen with nobody working on them, and whether all is settled. */
  observed: { unowned: number; settled: boolean; held: number; buckets: number };
  error: {
    error: unknown;
    during: "poll" | "config" | "claim" | "handoff" | "release" | "stamp" | "fence" | "session";
  };
}

export interface ShardedElectorState {
  /** The session term while the session's safe window is open (read from the clock), else undefined. */
  session: number | undefined;
  /** Monotonic instant the session's window closes unless renewed (set while a session is held). */
  sessionUntil: number | undefined;
  /** The group's bucket count and config epoch, once read. */
  buckets: number | undefined;
  epoch: number | undefined;
  /** Buckets this member works on now, with each tenure's term. */
  held: Array<{ bucket: number; term: number }>;
  view: string[];
  wants: number[];
  unowned: number;
  settled: boolean;
}
