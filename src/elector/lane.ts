/**
 * Load shedding's hook into the lease-holder core (./holder.ts): the lane decides when a
 * follower's store calls may go out. Renewals and releases never ask it (renewals first,
 * docs/design.md §4). The lane that sheds load is ./load-lane.ts. Runtime-neutral.
 */

export type LaneKind = "poll" | "acquire";

/** Frees an admitted call's place among the calls in flight; call it once the call has settled. Idempotent. */
export type LaneRelease = () => void;

/** Decides when follower-side store calls may go out; renewals never ask it (renewals first). */
export interface Lane {
  /**
   * Resolves when a call of `kind` may go out, with the function to call once it has settled.
   * Resolves at once (with a no-op release) when `signal` aborts: check `signal.aborted` after.
   */
  admit(kind: LaneKind, signal?: AbortSignal): Promise<LaneRelease>;
}

const noop: LaneRelease = () => {};

/** Admits every call at once and counts nothing: electors on a test clock, or a caller who opts out. */
export const openLane: Lane = { admit: () => Promise.resolve(noop) };
