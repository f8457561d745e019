/**
 * Load shedding's hook into the lease-holder core (src/elector/holder.ts). Runtime-neutral.
 */

/** Decides when follower-side store calls may go out; renewals never ask it (renewals first). */
export interface Lane {
  admit(kind: "poll" | "acquire", signal?: AbortSignal): Promise<void>;
}

/** Admits everything at once: the default until a lane that sheds load is given. */
export const openLane: Lane = { admit: async () => {} };
