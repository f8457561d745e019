/**
 * A sharded group as an operator reads it (`leasehold status --group`): its bucket count, each
 * member's session and load, each bucket's owner and term, and the target assignment the members
 * are converging to. Pure and runtime-neutral: it takes the group's records (one listing of
 * `<group>/`) and a wall-clock instant.
 *
 * Liveness here is judged as `leasehold status` judges a lease: `renewedAt + leaseMs` against the
 * reader's wall clock. It is informational; members decide by their own monotonic clocks
 * (docs/sharding.md, "Assignment"), so a member shown expired may still be inside its window for a
 * moment, and the target shown is the one the members compute once their views agree.
 */
import type { Stored } from "../lease.js";
import { targetAssignment } from "./assignment.js";
import {
  type BucketInfo,
  configName,
  decodeBucket,
  decodeConfig,
  decodeMember,
  type GroupConfig,
  type MemberInfo,
} from "./layout.js";
import { sessionMayLive } from "./membership.js";

export type MemberState = "live" | "expired" | "left" | "fenced";

export interface MemberStatus {
  id: string;
  /** The session term (the last one, once it ended). */
  session: number;
  state: MemberState;
  /** Buckets it holds under its current session and the current bucket count. */
  held: number;
  /** Buckets the target assignment gives it (0 unless live). */
  target: number;
  /** Buckets it asks their owners to hand over. */
  wants: number[];
  /** Who ended its expired session (state `fenced`). */
  fencedBy: string | null;
  /** Wall-clock ms its session runs out without a heartbeat; null once it ended. */
  expiresAt: number | null;
}

/**
 * - `held`: its owner's session is live and it is held under the current count;
 * - `free`: no record, or released;
 * - `owner-expired`: its owner's session has run out, not yet ended by another member;
 * - `session-over`: its owner's session ended (left, fenced, or replaced): free for the next owner;
 * - `old-count`: held under a bucket count that has since changed (released once its work stops).
 */
export type BucketState = "held" | "free" | "owner-expired" | "session-over" | "old-count";

export interface BucketStatus {
  bucket: number;
  owner: string | null;
  /** The bucket's fencing term (0: never held). */
  term: number;
  state: BucketState;
  /** The member the target assignment gives it to (null: no live member). */
  target: string | null;
}

export interface GroupStatus {
  group: string;
  config: GroupConfig;
  members: MemberStatus[];
  /** Every bucket below the count, then any record beyond it still held. */
  buckets: BucketStatus[];
  /** Buckets below the count not `held`. */
  unowned: number;
  /** Every bucket held by a live member, each live member within floor/ceil of N / M. */
  balanced: boolean;
}

/**
 * The status of `group` from its records, or `undefined` when it has no config record. Throws
 * nothing for odd records: a record that does not decode is left out.
 */
export function groupStatus(group: string, records: readonly Stored[], wallNow: number): GroupStatus | undefined {
  const configRecord = records.find((s) => s.record.name === configName(group));
  if (!configRecord) return undefined;
  const config = decodeConfig(configRecord.record);
  if (!config) return undefined;
  const members = new Map<string, MemberInfo>();
  const buckets = new Map<number, BucketInfo>();
  for (const stored of records) {
    const m = decodeMember(group, stored);
    if (m) members.set(m.id, m);
    const b = decodeBucket(group, stored);
    if (b) buckets.set(b.index, b);
  }
  const expiresAt = (m: MemberInfo) => (m.holder === null ? null : m.stored.record.renewedAt + m.leaseMs);
  const live = new Set(
    [...members.values()].filter((m) => m.holder !== null && expiresAt(m)! > wallNow).map((m) => m.id),
  );

  const stateOf = (b: BucketInfo | undefined): BucketState => {
    if (!b || b.holder === null) return "free";
    if (!sessionMayLive(members, b.holder, b.session)) return "session-over";
    if (!live.has(b.holder)) return "owner-expired";
    if (b.held !== config.epoch || b.index >= config.buckets) return "old-count";
    return "held";
  };

  const N = config.buckets;
  const owners = Array.from({ length: N }, (_, i) => {
    const b = buckets.get(i);
    return b && stateOf(b) === "held" ? b.holder : null;
  });
  const target = targetAssignment({ members: [...live], buckets: N, owners });

  const out: BucketStatus[] = [];
  for (let i = 0; i < N; i++) {
    const b = buckets.get(i);
    out.push({ bucket: i, owner: b?.holder ?? null, term: b?.term ?? 0, state: stateOf(b), target: target[i] ?? null });
  }
  for (const b of [...buckets.values()].sort((x, y) => x.index - y.index)) {
    if (b.index >= N && b.holder !== null) {
      out.push({ bucket: b.index, owner: b.holder, term: b.term, state: stateOf(b), target: null });
    }
  }

  const heldBy = new Map<string, number>();
  const targetOf = new Map<string, number>();
  for (const s of out) {
    if (s.state === "held" && s.owner) heldBy.set(s.owner, (heldBy.get(s.owner) ?? 0) + 1);
    if (s.target) targetOf.set(s.target, (targetOf.get(s.target) ?? 0) + 1);
  }
  const memberStatus: MemberStatus[] = [...members.values()]
    .sort((a, b) => (a.id < b.id ? -1 : 1))
    .map((m) => ({
      id: m.id,
      session: m.term,
      state: m.holder !== null ? (live.has(m.id) ? "live" : "expired") : m.fencedBy ? "fenced" : "left",
      held: heldBy.get(m.id) ?? 0,
      target: targetOf.get(m.id) ?? 0,
      wants: m.wants,
      fencedBy: m.fencedBy ?? null,
      expiresAt: expiresAt(m),
    }));

  const unowned = out.filter((s) => s.bucket < N && s.state !== "held").length;
  const loads = [...live].map((id) => heldBy.get(id) ?? 0);
  const balanced =
    unowned === 0 &&
    live.size > 0 &&
    Math.max(...loads) <= Math.ceil(N / live.size) &&
    Math.min(...loads) >= Math.floor(N / live.size) &&
    !out.some((s) => s.bucket >= N);
  return { group, config, members: memberStatus, buckets: out, unowned, balanced };
}
