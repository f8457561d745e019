/**
 * Shared listing feeds for the console's streams: while at least one stream follows a prefix, one
 * feed lists it once per `pollMs`, however many streams there are (as WatchHub keeps one read per
 * watched lease). What a listing finds changed is published through the hub like every record the
 * server reads, so the change log, the lease watches and every feed hear it by one path; what the
 * hub publishes (this server's writes, reads and pushes) reaches a feed at once through `observe`.
 *
 * A feed keeps at most `limit` records (the first in name order); a stream over a longer prefix is
 * told it is truncated.
 *
 * A bucket of a sharded group is held while its owner's session lives, not by its own stamps
 * (src/api/group-records.ts), so a feed keeps each listed bucket's real state as GET reports it,
 * judged again after every listing and whenever a record of its group changes; a bucket whose
 * state moved (its owner renewed, left or ran out) is told as changed. The group's config and the
 * owners' sessions come from the feed's own records when the prefix covers them; otherwise they are
 * read, once per judgement, as the list route does for a page. Runtime-neutral.
 */
import type { Clock } from "../../clock.js";
import type { Stored } from "../../lease.js";
import { configName, memberName } from "../../sharding/layout.js";
import { type BucketState, groupShape } from "../group-records.js";
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
  /** The real state of each listed bucket of a sharded group. */
  readonly buckets: ReadonlyMap<string, BucketState>;
  readonly truncated: boolean;
}

type Listener = (event: FeedEvent) => void;

interface Feed extends FeedView {
  prefix: string;
  limit: number;
  records: Map<string, Stored>;
  buckets: Map<string, BucketState>;
  truncated: boolean;
  /** The judgement of its buckets in progress (one at a time). */
  judging: Promise<void>;
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
  /**
   * A bucket's real state (GroupRecords.bucketState), `undefined` for any other record; `cache`
   * holds the records the feed already has, by name, and takes what it reads.
   */
  bucketState(stored: Stored, cache: Map<string, Promise<Stored | null>>): Promise<BucketState | undefined>;
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
        buckets: new Map(),
        truncated: false,
        judging: Promise.resolve(),
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
      // A read that fails here is tried again after the next listing.
      if (feed.loaded && groupShape(name)) this.judgeSoon(feed).catch(() => undefined);
    }
  }

  /** Judges the feed's buckets again once the judgement in progress is done. */
  private judgeSoon(feed: Feed, quiet = false): Promise<void> {
    const judged = feed.judging.then(() => this.judge(feed, quiet));
    feed.judging = judged.catch(() => undefined);
    return judged;
  }

  /**
   * The real state of every bucket the feed lists; a bucket whose state moved is told as changed
   * (unless `quiet`: a snapshot follows). A record the prefix covers is taken from the feed (absent
   * there: it does not exist); any other is read.
   */
  private async judge(feed: Feed, quiet: boolean): Promise<void> {
    const cache = new Map<string, Promise<Stored | null>>();
    const covered = (name: string) => name.startsWith(feed.prefix) && !feed.truncated;
    for (const [name, stored] of feed.records) {
      const shape = groupShape(name);
      if (shape?.kind !== "bucket") continue;
      const related = [configName(shape.group)];
      if (stored.record.holder !== null) related.push(memberName(shape.group, stored.record.holder));
      for (const r of related) {
        if (!cache.has(r) && covered(r)) cache.set(r, Promise.resolve(feed.records.get(r) ?? null));
      }
    }
    const seen = new Set<string>();
    for (const [name, stored] of [...feed.records]) {
      if (groupShape(name)?.kind !== "bucket") continue;
      const state = await this.deps.bucketState(stored, cache);
      if (feed.records.get(name) !== stored) continue; // changed meanwhile: judged again after this
      if (state) seen.add(name);
      const before = feed.buckets.get(name);
      if (state?.free === before?.free && state?.expiresAt === before?.expiresAt) continue;
      if (state) feed.buckets.set(name, state);
      else feed.buckets.delete(name);
      if (!quiet) this.emit(feed, { kind: "change", stored });
    }
    for (const name of feed.buckets.keys()) if (!seen.has(name)) feed.buckets.delete(name);
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
      feed.buckets = new Map();
      for (const [name, stored] of fresh) this.deps.publish(name, stored);
      await this.judgeSoon(feed, true);
      this.emit(feed, { kind: "snapshot" });
      return;
    }
    for (const [name, stored] of fresh) {
      if (feed.records.get(name)?.revision !== stored.revision) this.deps.publish(name, stored);
    }
    for (const name of [...feed.records.keys()]) {
      if (!fresh.has(name) && feed.records.delete(name)) this.emit(feed, { kind: "removed", name });
    }
    // Time alone moves a bucket's state (its owner ran out), and an owner outside the prefix is seen only here.
    await this.judgeSoon(feed);
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
