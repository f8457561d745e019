/**
 * Leader work a graceful stop waits for (`trackWork`, docs/design.md §4): the elector and the
 * bound elector keep it the same way, so the next leader never overlaps this one's shutdown.
 * A settled promise drops out; a rejected one counts as settled. Runtime-neutral.
 */
import type { Clock } from "../clock.js";

export class LeaderWork {
  private readonly pending = new Set<Promise<unknown>>();

  track(work: Promise<unknown>): void {
    const p = work.then(
      () => undefined,
      () => undefined,
    );
    this.pending.add(p);
    void p.then(() => this.pending.delete(p));
  }

  /** Waits for the work tracked now to settle, at most `graceMs` on `clock`. */
  async drain(clock: Clock, graceMs: number): Promise<void> {
    if (this.pending.size === 0) return;
    const grace = new AbortController();
    await Promise.race([Promise.all([...this.pending]), clock.sleep(graceMs, grace.signal)]);
    grace.abort("drained");
  }
}
