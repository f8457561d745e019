/**
 * In-instance fan-out of lease changes to watch streams. Every write this instance makes and
 * every record it reads is published. While a lease has at least one stream, the hub keeps
 * exactly one feed for it, however many streams there are: the store's own push when it has one,
 * else one read every `pollMs` (so changes made through other instances arrive within pollMs at
 * a cost of one read per lease per interval, not per watcher). Each stream drops what it has
 * already sent (same revision). The hub knows only the store: the lease service publishes what it
 * reads and writes here through a callback, so neither depends on the other.
 */
import type { Clock } from "../clock.js";
import type { LeaseStore, Stored } from "../lease.js";

type Subscriber = (stored: Stored | null) => void;

interface Feed {
  subscribers: Set<Subscriber>;
  stop: AbortController;
}

export class WatchHub {
  private readonly feeds = new Map<string, Feed>();

  constructor(
    /** The API's (metered) store: its push when it has one, else its reads. */
    private readonly store: LeaseStore,
    private readonly clock: Clock,
    private readonly pollMs: number,
  ) {}

  /** Leases with at least one stream (each has one feed). */
  get size(): number {
    return this.feeds.size;
  }

  publish(name: string, stored: Stored | null): void {
    for (const s of this.feeds.get(name)?.subscribers ?? []) s(stored);
  }

  subscribe(name: string, subscriber: Subscriber): () => void {
    let feed = this.feeds.get(name);
    if (!feed) {
      const created: Feed = { subscribers: new Set(), stop: new AbortController() };
      this.feeds.set(name, created);
      void this.run(name, created.stop.signal);
      feed = created;
    }
    feed.subscribers.add(subscriber);
    const own = feed;
    return () => {
      own.subscribers.delete(subscriber);
      if (own.subscribers.size === 0 && this.feeds.get(name) === own) {
        this.feeds.delete(name);
        own.stop.abort();
      }
    };
  }

  private async run(name: string, signal: AbortSignal): Promise<void> {
    const push = this.store.watch;
    while (!signal.aborted) {
      try {
        if (push) {
          for await (const stored of push.call(this.store, name, signal)) this.publish(name, stored);
        } else {
          await this.clock.sleep(this.pollMs, signal);
          if (!signal.aborted) this.publish(name, await this.store.get(name));
        }
      } catch {
        // A failed read or a broken push is retried after a pause; the streams stay open.
      }
      if (push && !signal.aborted) await this.clock.sleep(this.pollMs, signal);
    }
  }
}
