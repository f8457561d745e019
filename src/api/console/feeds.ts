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
 * A bucket of a sharded group is held while its owner's session lives, and a bound lease while
 * its process session does, not by their own stamps (src/api/lease-views.ts), so a feed keeps each
 * listed one's real state as GET reports it, judged again after every listing and whenever a record
 * of its group, a bound lease or a session one follows changes; one whose state moved (its session
 * renewed, left or ran out) is told as changed. The group's config and the
 * owners' sessions come from the feed's own records when the prefix covers them; otherwise they are
 * read, once per judgement, as the list route does for a page. Runtime-neutral.
 */
import type { Clock } from "../../clock.js";
import type { UnreadableLeaseView } from "../../http/schemas.js";
import type { Stored } from "../../lease.js";
import { isUnreadable, type Listed, listedName } from "../../listing.js";
import { configName } from "../../sharding/layout.js";
import { type BucketState, groupShape } from "../group-records.js";
import { corruptRow, isJudgementFailure, unjudgeableRow } from "../lease-views.js";
import { ProblemError } from "../problems.js";
import { isQuotaRecord } from "../quota-records.js";

export type FeedEvent =
  | { kind: "snapshot" }
  | { kind: "change"; stored: Stored }
  /** A record the server cannot read (listed so) or judge (what it names): its row replaces the lease's. */
  | { kind: "unreadable"; row: UnreadableLeaseView }
  | { kind: "removed"; name: string }
  /** A listing finished (changed or not): time-based state (expiry) may be judged again. */
  | { kind: "tick" }
  | { kind: "problem"; detail: string };

export interface FeedView {
  readonly records: ReadonlyMap<string, Stored>;
  /**
   * Why each listed name the server cannot read or judge is so: one bad record is a row of its
   * own, never the whole feed's problem. A `corrupt` one has no record; an `unjudgeable` one keeps
   * its record in `records`, judged again as the others are.
   */
  readonly unreadable: ReadonlyMap<string, UnreadableLeaseView>;
  /** The real state of each listed record held by a session (a bucket by its owner's, a bound lease by its process session's). */
  readonly held: ReadonlyMap<string, BucketState>;
  readonly truncated: boolean;
}

type Listener = (event: FeedEvent) => void;

interface Feed extends FeedView {
  prefix: string;
  limit: number;
  records: Map<string, Stored>;
  unreadable: Map<string, UnreadableLeaseView>;
  held: Map<string, BucketState>;
  /** The session records the held records follow (as of the last judgement). */
  sessions: Set<string>;
  truncated: boolean;
  /** The judgement of its session-held records in progress (one at a time). */
  judging: Promise<void>;
  /** The first listing is in. */
  loaded: boolean;
  failing: boolean;
  listeners: Set<Listener>;
  first: Promise<void>;
  stop: AbortController;
}

export interface FeedDeps {
  /** Up to `limit` records under `prefix`, in name order, an unreadable one in its place. */
  list(prefix: string, limit: number): Promise<Listed[]>;
  /** Hands a record a listing found changed to the hub (which calls `observe` back). */
  publish(name: string, stored: Stored): void;
  /**
   * The real state of a record held by a session (LeaseViews.held), `undefined` for any other
   * record; `cache` holds the records the feed already has, by name, and takes what it reads.
   */
  heldState(stored: Stored, cache: Map<string, Promise<Stored | null>>): Promise<BucketState | undefined>;
  /** The session record a held record's state follows (LeaseViews.sessionOf), if any. */
  sessionOf(stored: Stored): string | undefined;
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
        unreadable: new Map(),
        held: new Map(),
        sessions: new Set(),
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
        const listed = feed.unreadable.delete(name);
        if ((known && feed.records.delete(name)) || listed) this.emit(feed, { kind: "removed", name });
        continue;
      }
      // It reads now; whether it can be judged is said again by the next judgement.
      if (feed.unreadable.get(name)?.reason === "corrupt") feed.unreadable.delete(name);
      // Beyond a truncated feed's window: not followed.
      if (!known && feed.truncated) continue;
      if (known?.revision === stored.revision) continue;
      feed.records.set(name, stored);
      this.emit(feed, { kind: "change", stored });
      // A read that fails here is tried again after the next listing.
      const related = groupShape(name) || feed.sessions.has(name) || this.deps.sessionOf(stored) !== undefined;
      if (feed.loaded && related) this.judgeSoon(feed).catch(() => undefined);
    }
  }

  /** Judges the feed's session-held records again once the judgement in progress is done. */
  private judgeSoon(feed: Feed, quiet = false): Promise<void> {
    const judged = feed.judging.then(() => this.judge(feed, quiet));
    feed.judging = judged.catch(() => undefined);
    return judged;
  }

  /**
   * The real state of every bucket and bound lease the feed lists; one whose state moved is told as changed
   * (unless `quiet`: a snapshot follows). A record the prefix covers is taken from the feed (absent
   * there: it does not exist); any other is read.
   */
  private async judge(feed: Feed, quiet: boolean): Promise<void> {
    const cache = new Map<string, Promise<Stored | null>>();
    const covered = (name: string) => name.startsWith(feed.prefix) && !feed.truncated;
    const sessions = new Set<string>();
    const judged = (name: string, stored: Stored) =>
      groupShape(name)?.kind === "bucket" || this.deps.sessionOf(stored) !== undefined;
    for (const [name, stored] of feed.records) {
      const shape = groupShape(name);
      const session = this.deps.sessionOf(stored);
      if (shape?.kind !== "bucket" && session === undefined) continue;
      const related = shape?.kind === "bucket" ? [configName(shape.group)] : [];
      if (session !== undefined) {
        related.push(session);
        sessions.add(session);
      }
      for (const r of related) {
        if (!cache.has(r) && covered(r)) cache.set(r, Promise.resolve(feed.records.get(r) ?? null));
      }
    }
    const seen = new Set<string>();
    for (const [name, stored] of [...feed.records]) {
      if (!judged(name, stored)) continue;
      let state: BucketState | undefined;
      try {
        state = await this.deps.heldState(stored, cache);
      } catch (error) {
        // What it names cannot be judged: its own row, the rest of the feed goes on.
        if (!isJudgementFailure(error)) throw error;
        if (feed.records.get(name) !== stored) continue;
        const row = unjudgeableRow(name, error);
        if (feed.unreadable.get(name)?.detail !== row.detail) {
          feed.unreadable.set(name, row);
          if (!quiet) this.emit(feed, { kind: "unreadable", row });
        }
        feed.held.delete(name);
        continue;
      }
      if (feed.records.get(name) !== stored) continue; // changed meanwhile: judged again after this
      const wasUnjudged = feed.unreadable.get(name)?.reason === "unjudgeable" && feed.unreadable.delete(name);
      if (state) seen.add(name);
      const before = feed.held.get(name);
      if (!wasUnjudged && state?.free === before?.free && state?.expiresAt === before?.expiresAt) continue;
      if (state) feed.held.set(name, state);
      else feed.held.delete(name);
      if (!quiet) this.emit(feed, { kind: "change", stored });
    }
    for (const name of feed.held.keys()) if (!seen.has(name)) feed.held.delete(name);
    feed.sessions = sessions;
  }

  private emit(feed: Feed, event: FeedEvent): void {
    for (const listener of feed.listeners) listener(event);
  }

  /** One listing: the first fills the feed; later ones publish what changed and drop what is gone. */
  private async load(feed: Feed): Promise<void> {
    const listed = await this.deps.list(feed.prefix, feed.limit + 1);
    const truncated = listed.length > feed.limit;
    const fresh = new Map<string, Stored>();
    const corrupt = new Map<string, UnreadableLeaseView>();
    for (const entry of listed.slice(0, feed.limit)) {
      if (isQuotaRecord(listedName(entry))) continue; // the server's own, no caller's
      if (isUnreadable(entry)) corrupt.set(entry.name, corruptRow(entry));
      else fresh.set(entry.record.name, entry);
    }
    if (!feed.loaded || feed.failing || truncated !== feed.truncated) {
      // First listing, recovery after a failure, or a changed window: streams start over from it.
      feed.loaded = true;
      feed.failing = false;
      feed.truncated = truncated;
      feed.records = fresh;
      feed.unreadable = corrupt;
      feed.held = new Map();
      for (const [name, stored] of fresh) this.deps.publish(name, stored);
      await this.judgeSoon(feed, true);
      this.emit(feed, { kind: "snapshot" });
      return;
    }
    for (const [name, stored] of fresh) {
      if (feed.records.get(name)?.revision !== stored.revision) this.deps.publish(name, stored);
    }
    for (const [name, row] of corrupt) {
      if (feed.unreadable.get(name)?.detail === row.detail && !feed.records.has(name)) continue;
      feed.records.delete(name);
      feed.held.delete(name);
      feed.unreadable.set(name, row);
      this.emit(feed, { kind: "unreadable", row });
    }
    for (const name of [...feed.records.keys()]) {
      if (!fresh.has(name) && !corrupt.has(name) && feed.records.delete(name)) {
        feed.unreadable.delete(name);
        this.emit(feed, { kind: "removed", name });
      }
    }
    for (const [name, row] of [...feed.unreadable]) {
      if (row.reason === "corrupt" && !corrupt.has(name) && !fresh.has(name) && feed.unreadable.delete(name)) {
        this.emit(feed, { kind: "removed", name });
      }
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
