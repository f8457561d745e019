/**
 * In-instance fan-out of lease changes to watch streams. Every write this instance makes and
 * every record it reads is published. While a lease has at least one stream, the hub follows it
 * once, however many streams there are (docs/design.md §5, "Watch across replicas"):
 * - a store that pushes (`watch`: memory, Durable Objects, the HTTP store) gets one push feed per
 *   watched lease (and a read per interval while its push is broken);
 * - any other store is re-read by one poller for every watched lease at once: every `pollMs` it
 *   reads them all in requests of READ_BATCH names (the store's `getMany`: one DynamoDB
 *   BatchGetItem, one SQL `SELECT ... IN`; bounded parallel `get`s for a store without it), a few
 *   requests in flight at a time. So changes made through other instances arrive within about
 *   pollMs, at a cost that grows with the instances, not with the watched leases or the streams.
 * Each stream drops what it has already sent (same revision). A failed batch is read lease by
 * lease when single reads work (a backend that refuses batches, one corrupt record), and skipped
 * until the next interval otherwise (an outage): the streams stay open either way. The hub knows
 * only the store: the lease service publishes what it reads and writes here through a callback,
 * so neither depends on the other.
 */
import type { Clock } from "../clock.js";
import { isLeaseCorruptError } from "../errors.js";
import type { LeaseStore, Stored } from "../lease.js";
import { DEFAULT_READ_CONCURRENCY, eachBounded, READ_BATCH, readMany } from "../read-many.js";

type Subscriber = (stored: Stored | null) => void;

interface Feed {
  subscribers: Set<Subscriber>;
  /** Ends the lease's push feed (stores that push). */
  stop?: AbortController;
}

/** Batch requests of one polling round in flight at once. */
const BATCHES_IN_FLIGHT = 4;

export class WatchHub {
  private readonly feeds = new Map<string, Feed>();
  /** Ends the poller; set while it runs (stores without push, while any lease is watched). */
  private poller: AbortController | undefined;
  private readonly observers = new Set<(name: string, stored: Stored | null) => void>();

  constructor(
    /** The API's (metered) store: its push when it has one, else its reads. */
    private readonly store: LeaseStore,
    private readonly clock: Clock,
    private readonly pollMs: number,
  ) {}

  /** Leases with at least one stream (each followed once). */
  get size(): number {
    return this.feeds.size;
  }

  publish(name: string, stored: Stored | null): void {
    for (const o of this.observers) o(name, stored);
    for (const s of this.feeds.get(name)?.subscribers ?? []) s(stored);
  }

  /** Every record published, whatever its lease: the change log and the console's streams (src/api/console/). */
  observe(observer: (name: string, stored: Stored | null) => void): void {
    this.observers.add(observer);
  }

  subscribe(name: string, subscriber: Subscriber): () => void {
    let feed = this.feeds.get(name);
    if (!feed) {
      const created: Feed = { subscribers: new Set() };
      this.feeds.set(name, created);
      if (this.store.watch) {
        created.stop = new AbortController();
        void this.push(name, created.stop.signal);
      } else if (!this.poller) {
        this.poller = new AbortController();
        void this.poll(this.poller.signal);
      }
      feed = created;
    }
    feed.subscribers.add(subscriber);
    const own = feed;
    return () => {
      own.subscribers.delete(subscriber);
      if (own.subscribers.size === 0 && this.feeds.get(name) === own) {
        this.feeds.delete(name);
        own.stop?.abort();
        if (this.feeds.size === 0) {
          this.poller?.abort();
          this.poller = undefined;
        }
      }
    };
  }

  /**
   * One lease's push feed. A push that breaks or ends is opened again after a pause and one read,
   * so a push that keeps failing (an API behind the HTTP store that cannot stream) still leaves
   * one read per interval.
   */
  private async push(name: string, signal: AbortSignal): Promise<void> {
    const watch = this.store.watch!;
    while (!signal.aborted) {
      try {
        for await (const stored of watch.call(this.store, name, signal)) this.publish(name, stored);
      } catch {
        // Opened again after the pause; the streams stay open.
      }
      if (signal.aborted) return;
      await this.clock.sleep(this.pollMs, signal);
      if (signal.aborted) return;
      const stored = await this.store.get(name, { signal }).catch(() => undefined);
      if (stored !== undefined) this.publish(name, stored);
    }
  }

  /** Every pollMs, one round over every watched lease, until no lease is watched. */
  private async poll(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.clock.sleep(this.pollMs, signal);
      if (signal.aborted) return;
      const names = [...this.feeds.keys()];
      const batches = Math.ceil(names.length / READ_BATCH);
      await eachBounded(batches, BATCHES_IN_FLIGHT, (i) =>
        this.reread(names.slice(i * READ_BATCH, (i + 1) * READ_BATCH), signal),
      );
    }
  }

  /** One batch: published as read; never throws. */
  private async reread(names: string[], signal: AbortSignal): Promise<void> {
    try {
      const records = await readMany(this.store, names, { signal });
      for (const [i, name] of names.entries()) this.publish(name, records[i] ?? null);
      return;
    } catch {
      if (signal.aborted || !(await this.singleReadsWork(names[0]!))) return;
    }
    await eachBounded(names.length, DEFAULT_READ_CONCURRENCY, async (i) => {
      const name = names[i]!;
      const stored = await this.store.get(name, { signal }).catch(() => undefined);
      if (stored !== undefined) this.publish(name, stored);
    });
  }

  /** After a failed batch: does a single read work (then read the batch lease by lease)? */
  private async singleReadsWork(name: string): Promise<boolean> {
    return this.store.get(name).then(
      () => true,
      (error: unknown) => isLeaseCorruptError(error),
    );
  }
}
