/**
 * The membership view: which members' sessions are live, judged by the rules the elector uses
 * for one lease (docs/design.md §3), and when a bucket's owner session is over for good.
 *
 * - A member's session has expired by observed time once its record's revision has stayed the same
 *   for the record's `leaseMs` on this member's own monotonic clock since it first saw that
 *   revision (or at once when the record is already stale by its own wall-clock stamp plus
 *   `maxSkewMs`). Until then it is live, however old it looks.
 * - A session is over for good (dead) once its member record shows a newer session term, or the
 *   same term released (holder null). Session terms only grow and a released session is never
 *   renewed again (a new one takes term + 1), so this is stable: seen once, true forever, which is
 *   why a stale listing can never make a live session look dead.
 *
 * Runtime-neutral; the observation state is plain data a test can drive.
 */
import { expiresAt, tenureOver } from "../tenure.js";
import type { MemberInfo } from "./layout.js";

interface Seen {
  revision: string;
  /** Monotonic time this revision was first seen. */
  at: number;
  /** What a renewal does not change: a difference here is a change of the view. */
  shape: string;
}

const shapeOf = (m: MemberInfo) => JSON.stringify([m.holder, m.term, m.wants, m.fencedBy ?? null]);

export class MemberObservations {
  private readonly seen = new Map<string, Seen>();

  /**
   * Records one listing taken at monotonic `now`. Returns true when something other than a
   * renewal changed: a member appeared, disappeared, changed session, holder or wants.
   */
  update(members: Iterable<MemberInfo>, now: number): boolean {
    let changed = false;
    const present = new Set<string>();
    for (const m of members) {
      present.add(m.id);
      const before = this.seen.get(m.id);
      const shape = shapeOf(m);
      if (!before || before.shape !== shape) changed = true;
      if (!before || before.revision !== m.stored.revision) {
        this.seen.set(m.id, { revision: m.stored.revision, at: now, shape });
      }
    }
    for (const id of [...this.seen.keys()]) {
      if (!present.has(id)) {
        this.seen.delete(id);
        changed = true;
      }
    }
    return changed;
  }

  /**
   * Monotonic instant at which `m`'s session counts as expired if its revision does not change, or
   * `undefined` when it has no session (released) or was never seen.
   */
  expiresAt(m: MemberInfo, wallNow: number, maxSkewMs: number): number | undefined {
    if (m.holder === null) return undefined;
    const seen = this.seen.get(m.id);
    if (!seen || seen.revision !== m.stored.revision) return undefined;
    return expiresAt(m.stored.record, seen.at, wallNow, maxSkewMs);
  }
}

/**
 * Whether the session `session` of member `holder` may still be running, judged only by evidence
 * that cannot go stale: `false` only when the member record shows that session over for good.
 * An unknown member or an unreadable session counts as live (never take what you cannot judge).
 */
export function sessionMayLive(
  members: ReadonlyMap<string, MemberInfo>,
  holder: string,
  session: number | undefined,
): boolean {
  if (session === undefined) return true;
  const m = members.get(holder);
  return !m || !tenureOver({ holder, term: session }, m);
}
