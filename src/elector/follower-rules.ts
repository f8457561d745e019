/**
 * The follower's rules, written once for every candidate of a lease (docs/design.md §3): the
 * lease-holder core (./holder.ts) and the session-bound candidate (src/bound/bound-elector.ts)
 * both call these and neither keeps a copy.
 *
 * - When a record held under no session may be taken over: `judge` of src/tenure.ts on what was
 *   seen of it (observed time, or at once when stale by its stamps, missing or released).
 * - The pacing: a jittered delay, a poll every `pollMs`, and the back-off after a lost term
 *   (`LossBackoff`: doubling with each term lost in a row, capped at `leaseMs`).
 * - The lane: a follower's polls and acquisitions ask it first (renewals first).
 * - The wakeable wait of a candidate's loop.
 *
 * Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import type { Stored } from "../lease.js";
import { judge } from "../tenure.js";
import type { Lane, LaneKind, LaneRelease } from "./lane.js";

/** The reason for aborting internal timers: a plain value, so no DOMException (and stack) is built each time. */
const DONE = "done";

/**
 * The monotonic instant a plain record (no session named), first seen at `firstSeen`, may be
 * taken: its expiry by observed time, or `firstSeen` when it is free already (missing, released,
 * or stale by its own stamps).
 */
export function plainTakeoverAt(
  stored: Stored | null,
  firstSeen: number,
  clocks: { now: number; wallNow: number; maxSkewMs: number },
): number {
  const verdict = judge(undefined, { record: stored?.record ?? null, firstSeen }, { ...clocks, fallbackMs: 0 });
  return verdict.kind === "live" ? verdict.until : firstSeen;
}

export interface Pace {
  leaseMs: number;
  retryMs: number;
  jitter: number;
  random: () => number;
}

/** `ms` stretched by up to `jitter` of itself, at random. */
export function jittered(ms: number, pace: Pick<Pace, "jitter" | "random">): number {
  return ms * (1 + pace.jitter * pace.random());
}

/** retryMs doubled for each term lost in a row, capped at leaseMs; a random half of it shaved off. */
export function recampaignDelay(lossStreak: number, pace: Pace): number {
  const d = Math.min(pace.leaseMs, pace.retryMs * 2 ** Math.min(lossStreak - 1, 30));
  return pace.jitter === 0 ? d : d * (0.5 + 0.5 * pace.random());
}

/**
 * The back-off after lost terms, one per candidate: each term lost in a row (its window closed, or
 * it was fenced) doubles the wait before the next campaign (`recampaignDelay`); a term that was
 * held for a whole lease ends the run. Losses under load do not become a stampede of acquisitions.
 */
export class LossBackoff {
  private streak = 0;
  /** No write to take a lease before this monotonic instant. */
  notBefore = 0;

  /** A term held since `heldSince` was lost at `now` (expired or fenced, not released or stopped). */
  lost(now: number, heldSince: number, pace: Pace): void {
    if (now - heldSince >= pace.leaseMs) this.streak = 0;
    this.streak++;
    this.notBefore = now + recampaignDelay(this.streak, pace);
  }
}

/**
 * Waits for the lane: the function that frees the call's place once it has settled, or
 * `undefined` when `signal` aborted or the call is no longer `wanted` meanwhile.
 */
export async function admitCall(
  lane: Lane,
  kind: LaneKind,
  signal: AbortSignal,
  wanted: () => boolean,
  onError: (error: unknown) => void,
): Promise<LaneRelease | undefined> {
  let done: LaneRelease;
  try {
    done = await lane.admit(kind, signal);
  } catch (error) {
    if (!signal.aborted) onError(error);
    return undefined;
  }
  if (!signal.aborted && wanted()) return done;
  done();
  return undefined;
}

/** A candidate loop's sleep that `wake()` cuts short (a stop, a push, a change to act on). */
export class Waker {
  private cut: (() => void) | undefined;

  constructor(private readonly clock: Clock) {}

  async sleep(ms: number): Promise<void> {
    if (ms <= 0) return;
    const cut = new AbortController();
    this.cut = () => cut.abort(DONE);
    await this.clock.sleep(ms, cut.signal);
    this.cut = undefined;
    cut.abort(DONE);
  }

  wake(): void {
    this.cut?.();
  }
}
