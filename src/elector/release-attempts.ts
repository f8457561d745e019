/**
 * The release of a held tenure, written once for both candidates (docs/design.md §4): the core's
 * release (./holder.ts) and the bound elector's hand-over or release (src/bound/bound-elector.ts).
 * At most five attempts, each a compare-and-swap on the newest revision of this tenure, never
 * sent once its window has closed (it runs out by itself; a late write could only confuse), each
 * with the time left in that window as its deadline; after a failed call, a quarter of a retry
 * (at most what is left of the window) before the next. What to write, and what an applied or
 * lost write means, is the caller's. Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import type { LeaseRecord, Stored } from "../lease.js";
import type { CasWriter } from "./cas.js";

/** What one attempt decided: the release is over, or write again on top of a newer revision. */
export type ReleaseStep = "done" | "again";

export interface ReleaseSteps {
  writer: CasWriter;
  clock: Clock;
  /** Still this tenure: the loop ends the moment it is not (the watchdog, a loss). */
  holding: () => boolean;
  /** When the tenure's window closes (monotonic; at or before now: closed). */
  until: () => number;
  /** The record to write and the revision it replaces. */
  next: () => { record: LeaseRecord; revision: string };
  /** The write applied, producing `stored` (ours, or an earlier write of ours that landed). */
  applied: (stored: Stored, sentAt: number, sent: LeaseRecord) => ReleaseStep;
  /** The compare-and-swap lost to `current` (undefined: not known). */
  lost: (current: Stored | null | undefined) => ReleaseStep | Promise<ReleaseStep>;
  /** A call that failed (its outcome unknown). */
  failed: (error: unknown) => void;
  /** The jittered retry delay. */
  retryDelay: () => number;
}

export async function releaseAttempts(s: ReleaseSteps): Promise<void> {
  for (let attempt = 0; attempt < 5 && s.holding(); attempt++) {
    const sentAt = s.clock.now();
    const until = s.until();
    if (sentAt >= until) return;
    const { record, revision } = s.next();
    const outcome = await s.writer.write(record, revision, { timeoutMs: until - sentAt });
    if (!s.holding()) return;
    if (outcome.kind === "applied") {
      if (s.applied(outcome.stored, outcome.sentAt, record) === "done") return;
      continue;
    }
    if (outcome.kind === "lost") {
      if ((await s.lost(outcome.current)) === "done") return;
      continue;
    }
    s.failed(outcome.error);
    await s.clock.sleep(Math.min(s.retryDelay() / 4, Math.max(0, s.until() - s.clock.now())));
  }
}
