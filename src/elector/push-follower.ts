/**
 * A follower's push stream for one lease name (docs/design.md §3 "Followers"), shared by the
 * elector's core and the bound elector. Open only while its owner follows: a process leading many
 * leases holds no stream for them (a leader learns nothing from one that it needs: its renewal's
 * compare-and-swap, or its session's, tells it the lease was taken), which matters where streams
 * are bounded (the API: `watchStreamsPerToken`, 100 by default). After a failure, or a stream the
 * store ended, the stream is opened again after `retryMs` doubled per failure in a row (jittered,
 * capped at `maxBackoffMs`), so a refused stream costs a request now and then rather than one per
 * retry for ever; a stream that yields a record resets the back-off. Polls back a missing stream
 * up. Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import type { LeaseStore, Stored } from "../lease.js";

/** The longest wait before a failed stream is opened again (polls cover the gap meanwhile). */
export const MAX_PUSH_BACKOFF_MS = 30_000;

export interface PushFollowerOptions {
  store: LeaseStore;
  name: string;
  clock: Clock;
  random: () => number;
  retryMs: number;
  jitter: number;
  maxBackoffMs: number;
  /** A record (or `null`: none) the stream yielded. */
  onRecord(stored: Stored | null): void;
  onError(error: unknown): void;
}

export class PushFollower {
  /** A stream is open and has yielded at least once. */
  live = false;
  private abort: AbortController | undefined;

  constructor(private readonly o: PushFollowerOptions) {}

  /** Opens the stream unless it is open (or the store cannot push). */
  follow(): void {
    if (this.abort || !this.o.store.watch) return;
    const abort = new AbortController();
    this.abort = abort;
    void this.run(abort.signal);
  }

  /** Closes the stream, if open. */
  close(): void {
    this.abort?.abort("closed");
    this.abort = undefined;
    this.live = false;
  }

  private async run(signal: AbortSignal): Promise<void> {
    const { store, name, clock } = this.o;
    let failures = 0;
    while (!signal.aborted) {
      try {
        for await (const stored of store.watch!.call(store, name, signal)) {
          if (signal.aborted) return; // closed: a newer stream may be open, and its state is its own
          failures = 0;
          this.live = true;
          this.o.onRecord(stored);
        }
      } catch (error) {
        if (!signal.aborted) this.o.onError(error);
      }
      if (signal.aborted) return;
      this.live = false;
      failures++;
      const backoff = Math.min(this.o.maxBackoffMs, this.o.retryMs * 2 ** Math.min(failures - 1, 16));
      await clock.sleep(backoff * (1 + this.o.jitter * this.o.random()), signal);
    }
  }
}
