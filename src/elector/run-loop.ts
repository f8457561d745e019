/**
 * The rules the holder core (./holder.ts) and the bound elector (../bound/bound-elector.ts) share,
 * kept in one place so the two cannot drift: the loop (a step at a time, as leader while a term is
 * held and as follower otherwise, until stop is asked; then a term still held is released, stop's
 * `release`, the default, and if it is still held after that, given up as "released" or
 * "stopped"), and how an answer of the store about the lease is observed. Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import type { Stored } from "../lease.js";

/** The record last seen (null: none) and when that revision was first seen. */
export interface Seen {
  stored: Stored | null;
  /** Monotonic time this revision was first seen. */
  at: number;
}

export abstract class ElectorLoop<Held> {
  private readonly seenClock: Clock;
  /** The record last seen, the follower's basis for a takeover. */
  protected seen: Seen | undefined;
  /** An answer left the record unknown (a write whose outcome was not told): read before acting. */
  protected needsRead = true;
  /** The term this process leads now, if any. */
  protected held: Held | undefined;
  /** Set by stop: the loop ends after the step under way. */
  protected stopRequested = false;
  /** Stop's `release`: whether a held term is released on the way out. */
  protected releaseOnStop = true;

  protected abstract leaderStep(held: Held): Promise<void>;
  protected abstract followerStep(): Promise<void>;
  protected abstract release(held: Held): Promise<void>;
  protected abstract lose(reason: "released" | "stopped"): void;
  /** Called with each record (or null) an answer carried, once it is observed. */
  protected abstract onObserved(stored: Stored | null): void;

  constructor(clock: Clock) {
    this.seenClock = clock;
  }

  /**
   * An answer of the store about the lease: `undefined` (it carried no record) asks for a read; a
   * record of another revision than the one seen replaces it, stamped now; the same revision keeps
   * its first stamp (a takeover counts from when a revision was first seen).
   */
  protected observe(stored: Stored | null | undefined): void {
    if (stored === undefined) {
      this.needsRead = true;
      return;
    }
    if (this.seen === undefined || this.seen.stored?.revision !== stored?.revision) {
      this.seen = { stored, at: this.seenClock.now() };
    }
    this.onObserved(stored);
  }

  /** Runs until stop; resolves to whether a term was still held at the end (and so lost). */
  protected async runUntilStopped(): Promise<boolean> {
    while (!this.stopRequested) {
      if (this.held) await this.leaderStep(this.held);
      else await this.followerStep();
    }
    if (this.held && this.releaseOnStop) await this.release(this.held);
    if (!this.held) return false;
    this.lose(this.releaseOnStop ? "released" : "stopped");
    return true;
  }
}
