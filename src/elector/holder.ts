/**
 * The lease-holder core (docs/design.md §3, "One lease-holder core"): one record, one term at a
 * time, held by the rules every lease of leasehold follows. It is etcd's session shape: `Elector`
 * (src/leader/elector.ts) and the session core (./session-core.ts) that process sessions and sharded members hold are thin layers over
 * it that only translate its events. The follower's rules are in ./follower-rules.ts, which the
 * session-bound candidate (src/bound/bound-elector.ts) calls too; nothing else implements these
 * rules.
 *
 * - Establish: a new term is always `term + 1` by compare-and-swap, `term` being the higher of the
 *   record's and the highest this core has held. A term once ended is never held again: a late
 *   landing of an earlier write of it only tells where to write the next term.
 * - Hold: the term is valid until `sentAt + leaseMs - safetyMs`, `sentAt` being when its last
 *   successful write was sent (monotonic clock). `validTerm()` reads the clock at the moment of
 *   asking; a watchdog makes the end visible (the `lost` event) even while a store call hangs.
 * - Renew: one conditional write and no read. Metadata changes ride on it, written at once rather
 *   than at the next renewal. A conflict means the term was fenced: it is over.
 * - Ambiguous writes are resolved by `writeId` through the one write path (./cas.ts), never by
 *   assuming an outcome.
 * - Take over: a record held by someone else is taken only once its revision has stayed the same
 *   for its `leaseMs` on this clock since first seen (client-go's observed time), or at once when
 *   its own stamp says it expired (`renewedAt + leaseMs + maxSkewMs` before this wall clock: the
 *   fresh-candidate shortcut), when it is free, or when this core wrote it. The attempt is
 *   scheduled for that exact instant; reads in between (every `pollMs`, or a live push stream)
 *   only learn of an early release.
 * - After a lost term the next campaign waits a jittered delay that doubles with each term lost
 *   in a row, capped at `leaseMs`: losses under load do not turn into a stampede of acquisitions.
 * - Release: `holder: null` with the term kept, retried on top of our own newer revision (an
 *   in-flight renewal that landed), never blindly, and never after the window closed
 *   (./release-attempts.ts, which the bound elector's hand-over uses too).
 * - Follower-side calls (polls, acquisitions) ask the lane (./lane.ts) first; renewals and
 *   releases never wait on it. All store calls of one core run one at a time from one loop.
 *
 * Runtime-neutral: no Node-only API.
 */
import type { Clock } from "../clock.js";
import { isLeaseStillHeldError, LeaseStoreError } from "../errors.js";
import { type LeaseRecord, type LeaseStore, newWriteId, releasedRecord, type Stored } from "../lease.js";
import { CasWriter } from "./cas.js";
import { Emitter, type Listener } from "./events.js";
import { admitCall, jittered, LossBackoff, plainTakeoverAt, Waker } from "./follower-rules.js";
import { type Lane, type LaneKind, type LaneRelease, openLane } from "./lane.js";
import { MAX_PUSH_BACKOFF_MS, PushFollower } from "./push-follower.js";
import { releaseAttempts } from "./release-attempts.js";
import { renewalRetryAt, renewalTimeoutMs } from "./renewal-schedule.js";
import { ElectorLoop, type Seen } from "./run-loop.js";

/** The reason for aborting internal timers: a plain value, so no DOMException (and stack) is built each time. */
const DONE = "done";

/** How often a waiting follower reads for an early release by default: the lock clients' pace. */
export const DEFAULT_POLL_MS = 1000;

export interface HolderSettings {
  store: LeaseStore;
  /** The record's name. */
  name: string;
  /** The holder the record names. */
  identity: string;
  leaseMs: number;
  renewMs: number;
  /** Back-off after a failed call (jittered). */
  retryMs: number;
  /** While waiting for an expiry, read this often to learn of an early release. Default 1000. */
  pollMs?: number;
  safetyMs: number;
  maxSkewMs: number;
  callTimeoutMs: number;
  jitter: number;
  clock: Clock;
  random: () => number;
  /** Metadata written with each term (changed later by `setMetadata`). */
  metadata?: Record<string, string>;
  /** A release also clears the metadata (a member record: its hand-off requests end with it). */
  clearMetadataOnRelease?: boolean;
  /**
   * A process session record: each term carries `releases`, from 0, which `noteRelease` counts up
   * and writes at once (src/bound/, docs/design.md §4 "Reading a bound lease").
   */
  countsReleases?: boolean;
  /** Listen to the store's push stream while waiting, where it has one. */
  watch?: boolean;
  /** Admits follower-side calls; default: all at once. */
  lane?: Lane;
}

/** Why a term ended: its window closed unrenewed, another writer fenced it, it was released, or stopped. */
export type HolderLossReason = "expired" | "conflict" | "released" | "stopped";

export interface HolderEvents {
  /** A new term is held, its window open until `until`. */
  established: { stored: Stored; sentAt: number; until: number };
  renewed: { term: number; revision: string };
  lost: { term: number; reason: HolderLossReason };
  /** A record seen while not holding: read, pushed, in a conflict, or our own write not held. */
  observed: { stored: Stored | null };
  error: { error: unknown; during: "read" | "acquire" | "renew" | "release" };
}

/** The held term as `peek()` shows it. */
export interface HeldTerm {
  term: number;
  record: LeaseRecord;
  revision: string;
  /** Monotonic time the last successful write was sent. */
  sentAt: number;
  /** Monotonic time the window closes without a renewal. */
  until: number;
}

interface Held {
  stored: Stored;
  sentAt: number;
  until: number;
  /** When the term was established: a term that lived a lease ends a run of losses. */
  since: number;
  nextAt: number;
  /** After a failed write, the next one (even one carrying new metadata) waits until then. */
  notBefore: number;
  watchdog: AbortController;
}

export class LeaseHolder extends ElectorLoop<Held> {
  private readonly s: HolderSettings;
  private readonly writer: CasWriter;
  private readonly events = new Emitter<HolderEvents>();
  private readonly lane: Lane;
  private readonly pollMs: number;
  /** Revision of the newest record this process knows it wrote: its own, even if its term ended. */
  private ownRevision: string | undefined;
  /** The highest term this core has held: never held again once ended. */
  private lastTerm = 0;
  private metadata: Record<string, string>;
  /** Metadata (or the count of releases) changed since the last write that carried it. */
  private dirty = false;
  /** The held term's count of releases (with `countsReleases`). */
  private releases = 0;
  /** The back-off after lost terms (./follower-rules.ts). */
  private readonly backoff = new LossBackoff();
  private campaigning = true;
  private loop: Promise<void> | undefined;
  private ended = false;
  private readonly halt = new AbortController();
  private readonly waker: Waker;
  /** The revision of a bound lease this core last said it will not take (said once per revision). */
  private refusedBound: string | undefined;
  /** The follower's push stream (with `watch`): while it delivers, polling only backs it up. */
  private readonly push: PushFollower | undefined;

  constructor(settings: HolderSettings) {
    super(settings.clock);
    this.s = settings;
    this.lane = settings.lane ?? openLane;
    this.pollMs = settings.pollMs ?? DEFAULT_POLL_MS;
    this.metadata = { ...settings.metadata };
    this.waker = new Waker(settings.clock);
    this.writer = new CasWriter({
      store: settings.store,
      name: settings.name,
      clock: settings.clock,
      callTimeoutMs: settings.callTimeoutMs,
    });
    this.push = settings.watch
      ? new PushFollower({
          store: settings.store,
          name: settings.name,
          clock: settings.clock,
          random: settings.random,
          retryMs: settings.retryMs,
          jitter: settings.jitter,
          maxBackoffMs: MAX_PUSH_BACKOFF_MS,
          onRecord: (stored) => this.pushed(stored),
          onError: (error) => this.events.emit("error", { error, during: "read" }),
        })
      : undefined;
  }

  on<K extends keyof HolderEvents>(type: K, listener: Listener<HolderEvents[K]>): () => void {
    return this.events.on(type, listener);
  }

  /**
   * The term while it is held and its window is open at this instant, else `undefined`. A closed
   * window found here ends the term at once (`lost` fires now, not when the watchdog runs).
   */
  validTerm(): number | undefined {
    const h = this.held;
    if (!h) return undefined;
    if (this.s.clock.now() < h.until) return h.stored.record.term;
    this.lose("expired");
    this.wake();
    return undefined;
  }

  /** The held term, whether or not its window is still open, with no side effect (for snapshots). */
  peek(): HeldTerm | undefined {
    const h = this.held;
    if (!h) return undefined;
    const { record, revision } = h.stored;
    return { term: record.term, record, revision, sentAt: h.sentAt, until: h.until };
  }

  /** The record last seen while not holding (`null`: none exists; `undefined`: none seen yet). */
  get observed(): Stored | null | undefined {
    return this.seen?.stored;
  }

  get stopping(): boolean {
    return this.stopRequested;
  }

  /** True once the loop has ended (after `stop`). */
  get finished(): boolean {
    return this.ended;
  }

  /** Metadata for the next write; a change is written at once rather than at the next renewal. */
  setMetadata(metadata: Record<string, string>): void {
    if (sameMetadata(metadata, this.metadata)) return;
    this.metadata = { ...metadata };
    this.dirty = true;
    this.wake();
  }

  /**
   * With `countsReleases`: a record bound to the held term was released or handed over; the
   * count goes up by one and is written at once (a renewal), so followers that look at this
   * record learn to read theirs.
   */
  noteRelease(): void {
    if (!this.s.countsReleases || !this.held) return;
    this.releases++;
    this.dirty = true;
    this.wake();
  }

  /** What a write of the held term carries besides its metadata. */
  private counted(): Pick<LeaseRecord, "releases"> {
    return this.s.countsReleases ? { releases: this.releases } : {};
  }

  /**
   * A write of ours landed without the latest metadata or count: write them again. A store that
   * keeps no count (the HTTP store leaves it out) is not written again for it.
   */
  private carries(r: LeaseRecord): boolean {
    const counted = !this.s.countsReleases || r.releases === undefined || r.releases === this.releases;
    return sameMetadata(r.metadata, this.metadata) && counted;
  }

  start(): void {
    if (this.loop) return;
    this.loop = this.run();
  }

  /** No new term from now on; a held one keeps renewing until `stop`. */
  standDown(): void {
    this.campaigning = false;
    this.wake();
  }

  /**
   * Stops; with `release` (the default) a held term is released (holder null, term kept) first.
   * A second call waits for the first and does not change its `release`.
   */
  stop(options: { release?: boolean } = {}): Promise<void> {
    if (!this.stopRequested) {
      this.releaseOnStop = options.release ?? true;
      this.stopRequested = true;
      this.campaigning = false;
      this.halt.abort(DONE);
      this.push?.close();
      this.wake();
    }
    return this.loop ?? Promise.resolve();
  }

  private async run(): Promise<void> {
    try {
      await this.runUntilStopped();
    } finally {
      this.ended = true;
    }
  }

  // ---- holding ----

  protected async leaderStep(h: Held): Promise<void> {
    const now = this.s.clock.now();
    await this.wait((this.dirty ? Math.max(now, h.notBefore) : h.nextAt) - now);
    if (this.stopRequested || this.held !== h) return;
    const sentAt = this.s.clock.now();
    if (sentAt >= h.until) return this.lose("expired");
    const next: LeaseRecord = {
      ...h.stored.record,
      holder: this.s.identity,
      leaseMs: this.s.leaseMs,
      metadata: this.metadata,
      ...this.counted(),
      renewedAt: this.s.clock.wallNow(),
      writeId: newWriteId(),
    };
    const dirty = this.dirty;
    this.dirty = false;
    // The attempt's timeout and, below, the retry instant: ./renewal-schedule.ts (docs/partitions.md).
    const timeoutMs = renewalTimeoutMs(sentAt, h.until, this.s.callTimeoutMs);
    const outcome = await this.writer.write(next, h.stored.revision, { timeoutMs });
    if (this.held !== h) return; // the watchdog ended the term while the call was out
    if (outcome.kind === "applied") {
      // A recognised earlier renewal may carry older metadata: write the current one again.
      if (!this.carries(outcome.stored.record)) this.dirty = true;
      this.adopt(h, outcome.stored, outcome.sentAt);
      this.events.emit("renewed", { term: h.stored.record.term, revision: outcome.stored.revision });
    } else if (outcome.kind === "lost") {
      this.lose("conflict");
      this.observe(outcome.current);
    } else {
      this.dirty ||= dirty;
      this.events.emit("error", { error: outcome.error, during: "renew" });
      h.nextAt = renewalRetryAt({
        sentAt,
        failedAt: this.s.clock.now(),
        timeoutMs,
        until: h.until,
        callTimeoutMs: this.s.callTimeoutMs,
        backoffMs: this.retryDelay(),
      });
      h.notBefore = h.nextAt;
    }
  }

  private adopt(h: Held, stored: Stored, sentAt: number): void {
    h.stored = stored;
    h.sentAt = sentAt;
    h.until = sentAt + stored.record.leaseMs - this.s.safetyMs;
    h.nextAt = sentAt + this.s.renewMs;
    h.notBefore = 0;
    this.ownRevision = stored.revision;
    h.watchdog.abort(DONE);
    const watchdog = new AbortController();
    h.watchdog = watchdog;
    void this.s.clock.sleep(h.until - this.s.clock.now(), watchdog.signal).then(() => {
      if (!watchdog.signal.aborted && this.held === h) {
        this.lose("expired");
        this.wake();
      }
    });
  }

  protected lose(reason: HolderLossReason): void {
    const h = this.held;
    if (!h) return;
    this.held = undefined;
    h.watchdog.abort(DONE);
    // What we last wrote is what others see: our own record, a new term may go on top of it.
    this.seen = { stored: h.stored, at: h.sentAt };
    this.needsRead = false;
    if (reason === "expired" || reason === "conflict") {
      this.backoff.lost(this.s.clock.now(), h.since, this.s);
    }
    this.events.emit("lost", { term: h.stored.record.term, reason });
  }

  /** `holder: null`, the term kept. Retries against our own newer revision, never blindly. */
  protected release(h: Held): Promise<void> {
    return releaseAttempts({
      writer: this.writer,
      clock: this.s.clock,
      holding: () => this.held === h,
      until: () => h.until,
      next: () => ({
        record: releasedRecord(h.stored.record, this.s.clock.wallNow(), this.s.clearMetadataOnRelease ? {} : undefined),
        revision: h.stored.revision,
      }),
      applied: (stored, sentAt) => {
        if (stored.record.holder === null) {
          h.stored = stored;
          this.ownRevision = stored.revision;
          return "done";
        }
        this.adopt(h, stored, sentAt); // an earlier renewal landed meanwhile: again on top
        return "again";
      },
      lost: () => {
        this.lose("conflict");
        return "done";
      },
      failed: (error) => this.events.emit("error", { error, during: "release" }),
      retryDelay: () => this.retryDelay(),
    });
  }

  // ---- following ----

  protected async followerStep(): Promise<void> {
    if (!this.campaigning) {
      this.push?.close();
      await this.wait(Number.POSITIVE_INFINITY);
      return;
    }
    if (this.needsRead || !this.seen) {
      const done = await this.admit("poll");
      if (!done) return;
      let stored: Stored | null;
      try {
        stored = await this.writer.read().finally(done);
      } catch (error) {
        this.events.emit("error", { error, during: "read" });
        await this.wait(this.retryDelay());
        return;
      }
      this.needsRead = false;
      this.observe(stored);
    }
    const known = this.seen;
    if (!known) return;
    // A record, read or pushed, that shows one of our unknown writes means that write applied.
    const mine = this.writer.recognise(known.stored);
    if (mine) return this.adoptOwn(mine.stored, mine.sentAt);
    const at = Math.max(this.takeoverAt(known), this.backoff.notBefore);
    const now = this.s.clock.now();
    if (now < at) {
      this.push?.follow(); // only for a wait: a candidate about to write needs no stream
      // With a live push stream a poll is only a safety net (a stream can stall silently), once
      // per lease period: followers then cost no reads in steady state.
      const pollIn = this.push?.live ? Math.max(this.pollDelay(), this.s.leaseMs) : this.pollDelay();
      await this.wait(Math.min(at - now, pollIn));
      if (this.stopRequested || this.held || !this.campaigning) return;
      // Woken by the watch, or the poll came first: read again. At `at`: straight to the CAS.
      if (this.s.clock.now() < at || this.seen !== known) {
        this.needsRead = this.seen === known;
        return;
      }
    }
    await this.acquire(known);
  }

  /**
   * When a new term may be written on top of `known`: at once for a missing or released record,
   * one this process wrote, or one stale by its own stamp; otherwise once it has expired by
   * observed time.
   */
  private takeoverAt(known: Seen): number {
    const stored = known.stored;
    const r = stored?.record;
    if (!stored || !r || r.holder === null || stored.revision === this.ownRevision) return known.at;
    const session = r.session;
    if (session !== undefined) {
      // A lease bound to a process session (src/bound/) is valid while that session is, and its
      // record is not rewritten by the session's renewals: by observed time it would be taken
      // from a live holder. Only its release frees it here.
      if (this.refusedBound !== stored.revision) {
        this.refusedBound = stored.revision;
        const error = new LeaseStoreError(
          `lease "${r.name}" is bound to the process session ${session.name}@${session.term} (a session.elector's): an Elector never takes it over, as it cannot tell whether that session lives; use one mode for every candidate of a lease`,
          { ambiguous: false },
        );
        this.events.emit("error", { error, during: "acquire" });
      }
      return Number.POSITIVE_INFINITY;
    }
    return plainTakeoverAt(stored, known.at, {
      now: this.s.clock.now(),
      wallNow: this.s.clock.wallNow(),
      maxSkewMs: this.s.maxSkewMs,
    });
  }

  private async acquire(known: Seen): Promise<void> {
    const done = await this.admit("acquire");
    if (!done) return;
    const wall = this.s.clock.wallNow();
    const next: LeaseRecord = {
      name: this.s.name,
      holder: this.s.identity,
      term: Math.max(known.stored?.record.term ?? 0, this.lastTerm) + 1,
      leaseMs: this.s.leaseMs,
      acquiredAt: wall,
      renewedAt: wall,
      metadata: this.metadata,
      // A new term's count of releases starts at 0.
      ...(this.s.countsReleases ? { releases: 0 } : {}),
      writeId: newWriteId(),
    };
    const dirty = this.dirty;
    this.dirty = false;
    const outcome = await this.writer.write(next, known.stored?.revision ?? null).finally(done);
    if (outcome.kind === "applied") return this.adoptOwn(outcome.stored, outcome.sentAt);
    this.dirty ||= dirty;
    if (this.stopRequested) return;
    if (outcome.kind === "lost") return this.observe(outcome.current);
    this.events.emit("error", { error: outcome.error, during: "acquire" });
    const freeInMs = isLeaseStillHeldError(outcome.error) ? outcome.error.retryAfterMs : undefined;
    if (freeInMs !== undefined) {
      // The API refused (certainly not applied) and said when it will count the lease free: try
      // the same CAS at that moment instead of a retry later (docs/design.md §5, freeInMs).
      await this.wait(Math.min(freeInMs, this.s.leaseMs));
      return;
    }
    this.needsRead = true;
    await this.wait(this.retryDelay());
  }

  /** One of our writes produced `stored`: hold it as a new term if it is one and its window is open. */
  private adoptOwn(stored: Stored, sentAt: number): void {
    this.ownRevision = stored.revision;
    const r = stored.record;
    const fresh = r.holder === this.s.identity && r.term > this.lastTerm;
    if (!fresh || this.s.clock.now() >= sentAt + r.leaseMs - this.s.safetyMs) {
      // An ended term of ours (a late landing), a release, or a new term whose window already
      // closed: not held; a new term goes on top of it.
      this.writer.forget();
      this.seen = { stored, at: sentAt };
      this.needsRead = false;
      this.events.emit("observed", { stored });
      return;
    }
    const h: Held = {
      stored,
      sentAt,
      since: sentAt,
      until: 0,
      nextAt: 0,
      notBefore: 0,
      watchdog: new AbortController(),
    };
    this.held = h;
    this.push?.close(); // a holder needs no stream (./push-follower.ts)
    this.lastTerm = r.term;
    this.releases = 0;
    if (!this.carries(r)) this.dirty = true;
    this.adopt(h, stored, sentAt);
    this.events.emit("established", { stored, sentAt, until: h.until });
  }

  protected onObserved(stored: Stored | null): void {
    this.events.emit("observed", { stored });
  }

  /**
   * Waits for the lane: the function that frees the call's place once it has settled, or
   * `undefined` when stopped (or no longer campaigning) meanwhile.
   */
  private admit(kind: LaneKind): Promise<LaneRelease | undefined> {
    return admitCall(
      this.lane,
      kind,
      this.halt.signal,
      () => !this.stopRequested && !this.held && this.campaigning,
      (error) => this.events.emit("error", { error, during: kind === "poll" ? "read" : "acquire" }),
    );
  }

  // ---- scheduling ----

  private retryDelay(): number {
    return jittered(this.s.retryMs, this.s);
  }

  private pollDelay(): number {
    return jittered(this.pollMs, this.s);
  }

  /** Sleeps up to `ms`, cut short by stop(), a metadata change or a pushed record. */
  private async wait(ms: number): Promise<void> {
    if (!this.stopRequested) await this.waker.sleep(ms);
  }

  private wake(): void {
    this.waker.wake();
  }

  /** A record the follower's stream yielded: a release is known the moment it is written. */
  private pushed(stored: Stored | null): void {
    if (this.held || !this.campaigning) return;
    const before = this.seen;
    this.observe(stored);
    if (this.seen !== before) {
      this.needsRead = false;
      this.wake();
    }
  }
}

function sameMetadata(a: Record<string, string>, b: Record<string, string>): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
