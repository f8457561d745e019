/**
 * The abort reason of a bucket's signal, and what a bucket context's `assertLeader()` throws. It is
 * a `LeadershipLostError`, so code written for `runAsLeader` catches it unchanged; `revoked` says
 * why this member stopped working on the bucket.
 */
import { LeadershipLostError } from "../errors.js";

/**
 * - `handoff`: given to the member the assignment names (it asked for it).
 * - `session-expired`: this member's session window closed unrenewed (a pause, an unreachable store).
 * - `session-fenced`: another member ended this member's session after it expired by their clock.
 * - `resharded`: the group's bucket count changed; buckets are taken again under the new count.
 * - `stopping`: this member is leaving (its buckets are released together with its session).
 */
export type RevokeReason = "handoff" | "session-expired" | "session-fenced" | "resharded" | "stopping";

const LEADERSHIP_REASON = {
  handoff: "released",
  "session-expired": "expired",
  "session-fenced": "conflict",
  resharded: "released",
  stopping: "stopping",
} as const satisfies Record<RevokeReason, LeadershipLostError["reason"]>;

export class BucketLostError extends LeadershipLostError {
  override name = "BucketLostError";
  constructor(
    readonly bucket: number,
    term: number,
    readonly revoked: RevokeReason,
  ) {
    super(term, LEADERSHIP_REASON[revoked]);
    this.message = `bucket ${bucket}, term ${term}: ${revoked}`;
  }
}
