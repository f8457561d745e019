/**
 * A member's session (docs/sharding.md, "Sessions"): the member record `<group>/members/<id>`,
 * the one record a member writes in steady state, whatever the number of buckets. Every bucket the
 * member holds is valid exactly as long as this session is, as etcd and ZooKeeper sessions carry
 * their keys.
 *
 * The rules are the elector's (docs/design.md §3) applied to the member record:
 * - The session is valid until `sentAt + leaseMs - safetyMs`, `sentAt` being when its last
 *   successful write was sent (monotonic clock). `valid()` reads the clock at the moment of asking;
 *   a watchdog makes the end visible (the `lost` event) even while the store hangs.
 * - One renewal is one conditional write and no read; it also carries the member's metadata
 *   (its hand-off requests), so asking for buckets costs a write only when the request changes.
 * - A conflict on renewal means another member fenced this session after it expired by their
 *   observed time: the session is over, and so is every bucket held under it.
 * - A new session always takes term + 1 by compare-and-swap. On top of a record this process
 *   wrote itself (its own session that just ended) or a released one it does so at once; on top of
 *   a session it cannot prove its own (the same identity in another process, a restart) it waits
 *   until that session has expired by observed time, as a follower waits out a leader.
 * - A late landing of an earlier write never revives an ended session: a session term, once
 *   ended, is never held again (a new session is always term + 1 on top of it).
 *
 * Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { CasWriter } from "../elector/cas.js";
import { Emitter, type Listener } from "../elector/events.js";
import { type LeaseRecord, type LeaseStore, newWriteId, type Stored } from "../lease.js";

/** The reason for aborting internal timers: a plain value, so no DOMException (and stack) is built each time. */
const DONE = "done";

export interface SessionSettings {
  store: LeaseStore;
  /** The member record's name. */
  name: string;
  /** The member id: the holder the record names. */
  identity: string;
  leaseMs: number;
  renewMs: number;
  retryMs: number;
  safetyMs: number;
  maxSkewMs: number;
  callTimeoutMs: number;
  jitter: number;
  clock: Clock;
  random: () => number;
}

/** Why a session ended: its window closed unrenewed, another member fenced it, it was released, or stopped. */
export type SessionLossReason = "expired" | "fenced" | "released" | "stopped";

export interface SessionEvents {
  established: { term: number };
  renewed: { term: number };
  lost: { term: number; reason: SessionLossReason };
  error: { error: unknown; during: "read" | "establish" | "renew" | "release" };
}

interface Held {
  stored: Stored;
  sentAt: number;
  until: number;
  nextAt: number;
  /** After a failed write, the next one (even one carrying new metadata) waits until then. */
  notBefore: number;
  watchdog: AbortController;
}

export class MemberSession {
  private readonly s: SessionSettings;
  private readonly writer: CasWriter;
  private readonly events = new Emitter<SessionEvents>();
  private held: Held | undefined;
  /** The record as last seen while not holding, and when its revision was first seen. */
  private known: { stored: Stored | null; at: number } | undefined;
  private needsRead = true;
  /** Revision of the newest record this process knows it wrote: a session of its own, even if ended. */
  private ownRevision: string | undefined;
  /** The highest session term this process has held: never held again once ended. */
  private lastTerm = 0;
  private metadata: Record<string, string> = {};
  /** Metadata changed since the last write that carried it. */
  private dirty = false;
  private loop: Promise<void> | undefined;
  private stopRequested = false;
  private releaseOnStop = true;
  private wakeLoop: (() => void) | undefined;

  constructor(settings: SessionSettings) {
    this.s = settings;
    this.writer = new CasWriter({
      store: settings.store,
      name: settings.name,
      clock: settings.clock,
      callTimeoutMs: settings.callTimeoutMs,
    });
  }

  on<K extends keyof SessionEvents>(type: K, listener: Listener<SessionEvents[K]>): () => void {
    return this.events.on(type, listener);
  }

  /**
   * The session term while the session is valid at this instant, else `undefined`. A closed window
   * found here ends the session at once (the `lost` event fires now, not when the watchdog runs).
   */
  validTerm(): number | undefined {
    const h = this.held;
    if (!h) return undefined;
    if (this.s.clock.now() < h.until) return h.stored.record.term;
    this.lose("expired");
    this.wake();
    return undefined;
  }

  /** Monotonic instant the current session's window closes without a renewal. */
  get until(): number | undefined {
    return this.held?.until;
  }

  /** The held session, whether or not its window is still open, with no side effect (for snapshots). */
  peek(): { term: number; until: number } | undefined {
    const h = this.held;
    return h ? { term: h.stored.record.term, until: h.until } : undefined;
  }

  /** The member record as this session last wrote it, while held. */
  get record(): LeaseRecord | undefined {
    return this.held?.stored.record;
  }

  /** Metadata for the next write; a change is written at once rather than at the next renewal. */
  setMetadata(metadata: Record<string, string>): void {
    if (JSON.stringify(metadata) === JSON.stringify(this.metadata)) return;
    this.metadata = { ...metadata };
    this.dirty = true;
    this.wake();
  }

  start(): void {
    if (this.loop) return;
    this.loop = this.run();
  }

  /** Stops renewing; with `release` (default) the record is released (holder null, term kept) first. */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.releaseOnStop = options.release ?? true;
    this.stopRequested = true;
    this.wake();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopRequested) {
      if (this.held) await this.heldStep(this.held);
      else await this.establishStep();
    }
    if (this.held && this.releaseOnStop) await this.release(this.held);
    if (this.held) this.lose(this.releaseOnStop ? "released" : "stopped");
  }

  // ---- holding ----

  private async heldStep(h: Held): Promise<void> {
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
      renewedAt: this.s.clock.wallNow(),
      writeId: newWriteId(),
    };
    this.dirty = false;
    const outcome = await this.writer.write(next, h.stored.revision, { timeoutMs: h.until - sentAt });
    if (this.held !== h) return; // the watchdog ended the session while the call was out
    if (outcome.kind === "applied") {
      // A recognised earlier renewal may carry older metadata: write the current one again.
      if (JSON.stringify(outcome.stored.record.metadata) !== JSON.stringify(this.metadata)) this.dirty = true;
      this.adopt(h, outcome.stored, outcome.sentAt);
      this.events.emit("renewed", { term: h.stored.record.term });
    } else if (outcome.kind === "lost") {
      this.lose("fenced");
      this.observe(outcome.current);
    } else {
      this.dirty = true;
      this.events.emit("error", { error: outcome.error, during: "renew" });
      h.nextAt = Math.min(this.s.clock.now() + this.retryDelay(), h.until);
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

  private lose(reason: SessionLossReason): void {
    const h = this.held;
    if (!h) return;
    this.held = undefined;
    h.watchdog.abort(DONE);
    this.known = { stored: h.stored, at: h.sentAt };
    this.needsRead = false;
    this.events.emit("lost", { term: h.stored.record.term, reason });
  }

  /** holder null, the term kept: every bucket held under this session is free at once. */
  private async release(h: Held): Promise<void> {
    for (let attempt = 0; attempt < 5 && this.held === h; attempt++) {
      const sentAt = this.s.clock.now();
      if (sentAt >= h.until) return; // it runs out by itself
      const next: LeaseRecord = {
        ...h.stored.record,
        holder: null,
        metadata: {},
        renewedAt: this.s.clock.wallNow(),
        writeId: newWriteId(),
      };
      const outcome = await this.writer.write(next, h.stored.revision, { timeoutMs: h.until - sentAt });
      if (this.held !== h) return;
      if (outcome.kind === "applied") {
        if (outcome.stored.record.holder === null) return;
        this.adopt(h, outcome.stored, outcome.sentAt); // an earlier renewal landed meanwhile: again on top
        continue;
      }
      if (outcome.kind === "lost") return this.lose("fenced");
      this.events.emit("error", { error: outcome.error, during: "release" });
      await this.s.clock.sleep(Math.min(this.retryDelay() / 4, Math.max(0, h.until - this.s.clock.now())));
    }
  }

  // ---- establishing ----

  private async establishStep(): Promise<void> {
    if (this.needsRead || !this.known) {
      let stored: Stored | null;
      try {
        stored = await this.writer.read();
      } catch (error) {
        this.events.emit("error", { error, during: "read" });
        await this.wait(this.retryDelay());
        return;
      }
      if (this.stopRequested) return;
      this.needsRead = false;
      const mine = this.writer.recognise(stored);
      if (mine) return this.adoptOwn(mine.stored, mine.sentAt);
      this.observe(stored);
    }
    const known = this.known!;
    const at = this.establishAt(known);
    const now = this.s.clock.now();
    if (now < at) {
      await this.wait(Math.min(at - now, this.retryDelay()));
      if (this.s.clock.now() < at) this.needsRead = true;
      return;
    }
    const wall = this.s.clock.wallNow();
    const next: LeaseRecord = {
      name: this.s.name,
      holder: this.s.identity,
      term: Math.max(known.stored?.record.term ?? 0, this.lastTerm) + 1,
      leaseMs: this.s.leaseMs,
      acquiredAt: wall,
      renewedAt: wall,
      metadata: this.metadata,
      writeId: newWriteId(),
    };
    const dirty = this.dirty;
    this.dirty = false;
    const outcome = await this.writer.write(next, known.stored?.revision ?? null);
    if (outcome.kind === "applied") return this.adoptOwn(outcome.stored, outcome.sentAt);
    this.dirty ||= dirty;
    if (outcome.kind === "lost") {
      this.observe(outcome.current);
      return;
    }
    this.events.emit("error", { error: outcome.error, during: "establish" });
    this.needsRead = true;
    await this.wait(this.retryDelay());
  }

  /**
   * When a new session may be written on top of `known`: now for a free record, a released one or
   * one this process wrote; otherwise once it has expired by observed time (or its own stamp).
   */
  private establishAt(known: { stored: Stored | null; at: number }): number {
    const r = known.stored?.record;
    if (!known.stored || !r || r.holder === null || known.stored.revision === this.ownRevision) return known.at;
    if (r.renewedAt + r.leaseMs + this.s.maxSkewMs < this.s.clock.wallNow()) return known.at;
    return known.at + r.leaseMs;
  }

  /** One of our writes produced `stored`: hold it as a new session if it is one and its window is open. */
  private adoptOwn(stored: Stored, sentAt: number): void {
    this.ownRevision = stored.revision;
    const r = stored.record;
    const fresh = r.holder === this.s.identity && r.term > this.lastTerm;
    if (!fresh || this.stopRequested || this.s.clock.now() >= sentAt + r.leaseMs - this.s.safetyMs) {
      // An ended session of ours, or a new one whose window already closed: a new session goes on top.
      this.known = { stored, at: sentAt };
      this.needsRead = false;
      return;
    }
    const h: Held = { stored, sentAt, until: 0, nextAt: 0, notBefore: 0, watchdog: new AbortController() };
    this.held = h;
    this.lastTerm = r.term;
    if (JSON.stringify(r.metadata) !== JSON.stringify(this.metadata)) this.dirty = true;
    this.adopt(h, stored, sentAt);
    this.events.emit("established", { term: r.term });
  }

  private observe(stored: Stored | null | undefined): void {
    if (stored === undefined) {
      this.needsRead = true;
      return;
    }
    if (this.known?.stored?.revision !== stored?.revision || this.known === undefined) {
      this.known = { stored, at: this.s.clock.now() };
    }
  }

  // ---- scheduling ----

  private retryDelay(): number {
    return this.s.retryMs * (1 + this.s.jitter * this.s.random());
  }

  private async wait(ms: number): Promise<void> {
    if (this.stopRequested || ms <= 0) return;
    const cut = new AbortController();
    this.wakeLoop = () => cut.abort(DONE);
    await this.s.clock.sleep(ms, cut.signal);
    this.wakeLoop = undefined;
    cut.abort(DONE);
  }

  private wake(): void {
    this.wakeLoop?.();
  }
}
