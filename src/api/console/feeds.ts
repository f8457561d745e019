/**
 * Shared listing feeds for the console's streams: while at least one stream follows a prefix, one
 * feed lists it once per `pollMs`, however many streams there are (as WatchHub keeps one read per
 * watched lease). What a listing finds changed is published through the hub like every record the
 * server reads, so the change log, the lease watches and every feed hear it by one path; what the
 * hub publishes (this server's writes, reads and pushes) reaches a feed at once through `observe`.
 *
 * A feed keeps at most `limit` records (the first in name order); a stream over a longer prefix is
 * told it is truncated. Runtime-neutral.
 */
import type { Clock } from "../../clock.js";
import type { Stored } from "../../lease.js";
import { ProblemError } from "../problems.js";

export type FeedEvent =
  | { kind: "snapshot" }
  | { kind: "change"; stored: Stored }
  | { kind: "removed"; name: string }
  /** A listing finished (changed or not): time-based state (expiry) may be judged again. */
  | { kind: "tick" }
  | { kind: "problem"; detail: string };

export interface FeedView {
  readonly records: ReadonlyMap<string, Stored>;
  readonly truncated: boolean;
}

type Listener = (event: FeedEvent) => void;

interface Feed extends FeedView {
  prefix: string;
  limit: number;
  records: Map<string, Stored>;
  truncated: boolean;
  /** The first listing is in. */
  loaded: boolean;
  failing: boolean;
  listeners: Set<Listener>;
  first: Promise<void>;
  stop: AbortController;
}

export interface FeedDeps {
  /** Up to `limit` records under `prefix`, in name order. */
  list(prefix: string, limit: number): Promise<Stored[]>;
  /** Hands a record a listing found changed to the hub (which calls `observe` back). */
  publish(name: string, stored: Stored): void;
  clock: Clock;
  pollMs: number;
}

export class PrefixFeeds {
  private readonly feeds = new Map<string, Feed>();

  constructor(private readonly deps: FeedDeps) {}

  /**
   * Follows `prefix`: resolves once the first listing is in (rejects with its problem, following
   * nothing), with the feed's live view; `listener` then hears every change. Call the returned
   * function to stop.
   */
  async subscribe(prefix: string, limit: number, listener: Listener): Promise<{ view: FeedView; stop: () => void }> {
    const key = `${limit}:${prefix}`;
    let feed = this.feeds.get(key);
    if (!feed) {
      const created: Feed = {
        prefix,
        limit,
        records: new Map(),
        truncated: false,
        loaded: false,
        failing: false,
        listeners: new Set(),
        first: Promise.resolve(),
        stop: new AbortController(),
      };
      created.first = this.load(created).then(() => void this.run(created));
      this.feeds.set(key, created);
      feed = created;
    }
    const own = feed;
    own.listeners.add(listener);
    const stop = () => {
      own.listeners.delete(listener);
      if (own.listeners.size === 0 && this.feeds.get(key) === own) {
        this.feeds.delete(key);
        own.stop.abort();
      }
    };
    try {
      await own.first;
    } catch (error) {
      stop();
      throw error;
    }
    return { view: own, stop };
  }

  /** Every record the hub publishes: a feed over its name keeps it and tells its streams. */
  observe(name: string, stored: Stored | null): void {
    for (const feed of this.feeds.values()) {
      if (!name.startsWith(feed.prefix)) continue;
      const known = feed.records.get(name);
      if (stored === null) {
        if (known && feed.records.delete(name)) this.emit(feed, { kind: "removed", name });
        continue;
      }
      // Beyond a truncated feed's window: not followed.
      if (!known && feed.truncated) continue;
      if (known?.revision === stored.revision) continue;
      feed.records.set(name, stored);
      this.emit(feed, { kind: "change", stored });
    }
  }

  private emit(feed: Feed, event: FeedEvent): void {
    for (const listener of feed.listeners) listener(event);
  }

  /** One listing: the first fills the feed; later ones publish what changed and drop what is gone. */
  private async load(feed: Feed): Promise<void> {
    const listed = await this.deps.list(feed.prefix, feed.limit + 1);
    const truncated = listed.length > feed.limit;
    const fresh = new Map(listed.slice(0, feed.limit).map((s) => [s.record.name, s]));
    if (!feed.loaded || feed.failing || truncated !== feed.truncated) {
      // First listing, recovery after a failure, or a changed window: streams start over from it.
      feed.loaded = true;
      feed.failing = false;
      feed.truncated = truncated;
      feed.records = fresh;
      for (const [name, stored] of fresh) this.deps.publish(name, stored);
      this.emit(feed, { kind: "snapshot" });
      return;
    }
    for (const [name, stored] of fresh) {
      if (feed.records.get(name)?.revision !== stored.revision) this.deps.publish(name, stored);
    }
    for (const name of [...feed.records.keys()]) {
      if (!fresh.has(name) && feed.records.delete(name)) this.emit(feed, { kind: "removed", name });
    }
  }

  private async run(feed: Feed): Promise<void> {
    const signal = feed.stop.signal;
    while (!signal.aborted) {
      await this.deps.clock.sleep(this.deps.pollMs, signal);
      if (signal.aborted) return;
      try {
        await this.load(feed);
      } catch (error) {
        if (!feed.failing) {
          feed.failing = true;
          const detail = error instanceof ProblemError ? error.detail : "the store could not be listed";
          this.emit(feed, { kind: "problem", detail });
        }
        continue;
      }
      this.emit(feed, { kind: "tick" });
    }
  }
}
