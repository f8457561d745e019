/**
 * The elector (docs/design.md §3, §4): one candidate for one lease.
 *
 * - Decisions use the monotonic clock only. A leader is leader until `sentAt + leaseMs - safetyMs`,
 *   `sentAt` being when its last successful write was sent; a watchdog ends leadership at that
 *   instant even while a store call hangs.
 * - A follower treats a lease as expired once the revision it sees has not changed for the
 *   holder's `leaseMs` on its own clock (client-go's observed time) and schedules its takeover for
 *   exactly that instant; it polls every `retryMs` (or listens, when the store can push) only to
 *   learn of releases early.
 * - One renewal is one conditional write and no read. An ambiguous write is resolved by the
 *   `writeId` of the record the store holds, never by assuming an outcome.
 * - All store calls of one elector run one at a time from one loop, so a release never races a
 *   renewal of the same elector.
 *
 * Runtime-neutral: no Node-only API.
 */
import { type Clock, systemClock } from "./clock.js";
import { CasWriter } from "./elector/cas.js";
import { Emitter, type Listener } from "./elector/events.js";
import { type Lane, openLane, processLane } from "./elector/load-lane.js";
import { resolveElectorOptions } from "./elector/options.js";
import { isStoreContractError, LeadershipLostError, type LossReason } from "./errors.js";
import { type LeaseRecord, type LeaseStore, newWriteId, type Stored } from "./lease.js";

export type { LossReason } from "./errors.js";

export interface ElectorOptions {
  /** Where the lease lives. */
  store: LeaseStore;
  /** The lease name (docs/design.md §1 pattern). */
  name: string;
  /** This candidate's identity; unique per process. Default: a random id. */
  identity?: string;
  /** Lease duration after each renewal. Default 15000. */
  leaseMs?: number;
  /** Interval between renewals; must be < leaseMs - safetyMs. Default leaseMs / 3. */
  renewMs?: number;
  /** Follower poll interval and retry delay after a failed call. Default leaseMs / 7.5 (2 s for 15 s). */
  retryMs?: number;
  /** Margin a leader gives up before its lease could expire elsewhere (clock rate drift, timer lateness). Default leaseMs / 10. */
  safetyMs?: number;
  /** Retries wait retryMs * (1 + jitter * random); 0 disables. Default 0.2. */
  jitter?: number;
  /** Bound on wall-clock skew between machines, for the fresh-candidate shortcut (docs/design.md §3, §7). Default 1000. */
  maxSkewMs?: number;
  /** Longest a store call may take before it counts as ambiguous. Default renewMs. */
  callTimeoutMs?: number;
  /** On stop, how long leader work may run after its signal aborted before the lease is released anyway. Default leaseMs. */
  graceMs?: number;
  /** Small string map stored with the lease (e.g. this leader's address). */
  metadata?: Record<string, string>;
  clock?: Clock;
  /** Source of jitter, for deterministic tests. Default Math.random. */
  random?: () => number;
  /**
   * Admits this follower's polls and acquisitions (renewals never ask: docs/design.md §4). Default:
   * the process's shared `LoadLane` on the system clock, `openLane` (no holding back) on another clock.
   */
  lane?: Lane;
}

export interface ElectedEvent {
  term: number;
  record: LeaseRecord;
  /** Aborts the moment this term's leadership ends (or stop() begins). */
  signal: AbortSignal;
  /**
   * True while this term is held and its safe window is open, read from the monotonic clock at
   * the moment of asking: call it right before each side effect. Unlike `signal`, it does not
   * wait for a timer, so a process that was paused past its window sees `false` on waking.
   */
  stillLeader: () => boolean;
}
export interface DeposedEvent {
  term: number;
  reason: LossReason;
}
export interface LeaderEvent {
  /** The holder now observed, `null` when the lease is free. */
  holder: string | null;
  term: number;
}
export interface ElectorEvents {
  elected: ElectedEvent;
  deposed: DeposedEvent;
  leader: LeaderEvent;
  renewed: { term: number; revision: string };
  error: { error: unknown; during: "read" | "acquire" | "renew" | "release" };
}

export type ElectorPhase = "idle" | "follower" | "leader" | "stopped";

export interface ElectorState {
  phase: ElectorPhase;
  /** Leader, and the monotonic clock has not passed `leaderUntil` (whether or not the watchdog has run). */
  isLeader: boolean;
  /** The holder last observed (this candidate when leader). */
  holder: string | null;
  /** Term of the record last observed or held; 0 when none seen. */
  term: number;
  /** Monotonic time at which leadership ends without a renewal; `undefined` when not leader. */
  leaderUntil: number | undefined;
  /** Monotonic time of the last successful renewal or acquisition sent. */
  lastRenewalSentAt: number | undefined;
}

interface Held {
  stored: Stored;
  sentAt: number;
  until: number;
  controller: AbortController;
  watchdog: AbortController;
  /** Next write not before this instant (renewal schedule or retry back-off). */
  nextAt: number;
}

interface Observed {
  stored: Stored | null;
  /** Monotonic time this revision was first seen. */
  at: number;
}

export class Elector {
  readonly name: string;
  readonly identity: string;
  readonly leaseMs: number;
  readonly renewMs: number;
  readonly retryMs: number;
  readonly safetyMs: number;
  private readonly store: LeaseStore;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly jitter: number;
  private readonly maxSkewMs: number;
  private readonly callTimeoutMs: number;
  private readonly graceMs: number;
  private readonly metadata: Record<string, string>;
  /** Admits follower-side calls; renewals never ask it (renewals first). */
  readonly lane: Lane;

  private phase: ElectorPhase = "idle";
  private held: Held | undefined;
  private observed: Observed | undefined;
  private lastLeader: { holder: string | null; term: number } | undefined;
  /** Every store call goes through it: timeouts, and which writes are ours (the ownership rule). */
  private readonly writer: CasWriter;
  /** The highest term this elector has been leader of: it never hands out a term twice. */
  private lastLedTerm = 0;
  /** Read before the next follower decision (the last observation may be stale). */
  private needsRead = true;
  private stopping = false;
  private stopRequested = false;
  private releaseOnStop = true;
  private loop: Promise<void> | undefined;
  private wakeLoop: (() => void) | undefined;
  private readonly work = new Set<Promise<unknown>>();
  private readonly events = new Emitter<ElectorEvents>();
  private watchAbort: AbortController | undefined;
  /** True while the store's push stream is delivering: polling then only backs it up. */
  private watchLive = false;

  constructor(options: ElectorOptions) {
    const o = resolveElectorOptions(options);
    this.store = options.store;
    this.name = o.name;
    this.identity = o.identity ?? `candidate-${newWriteId().slice(0, 8)}`;
    this.leaseMs = o.leaseMs;
    this.renewMs = o.renewMs;
    this.retryMs = o.retryMs;
    this.safetyMs = o.safetyMs;
    this.jitter = o.jitter;
    this.maxSkewMs = o.maxSkewMs;
    this.callTimeoutMs = o.callTimeoutMs;
    this.graceMs = o.graceMs;
    this.metadata = o.metadata;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.lane = options.lane ?? (this.clock === systemClock ? processLane() : openLane);
    this.writer = new CasWriter({
      store: this.store,
      name: this.name,
      clock: this.clock,
      callTimeoutMs: o.callTimeoutMs,
    });
    // A store that cannot keep the contract (StoreContractError) does not get better by retrying:
    // after the error event, campaigning stops (a term held ends without a release).
    this.events.on("error", ({ error }) => {
      if (!isStoreContractError(error) || this.stopRequested) return;
      this.releaseOnStop = false;
      this.stopRequested = true;
      this.wake();
    });
  }

  /** Subscribes to an event; returns the unsubscribe function. */
  on<K extends keyof ElectorEvents>(type: K, listener: Listener<ElectorEvents[K]>): () => void {
    return this.events.on(type, listener);
  }

  /** A snapshot; `isLeader` is computed from the clock at the moment of asking. */
  get current(): ElectorState {
    const h = this.held;
    return {
      phase: this.phase,
      isLeader: h !== undefined && this.clock.now() < h.until,
      holder: h ? this.identity : (this.observed?.stored?.record.holder ?? null),
      term: h ? h.stored.record.term : (this.observed?.stored?.record.term ?? 0),
      leaderUntil: h?.until,
      lastRenewalSentAt: h?.sentAt,
    };
  }

  /** The signal of the current term, when leader. */
  get signal(): AbortSignal | undefined {
    return this.held?.controller.signal;
  }

  /** Starts campaigning. Idempotent. */
  start(): void {
    if (this.loop) return;
    this.phase = "follower";
    this.startWatch();
    this.loop = this.run();
  }

  /**
   * Registers leader work: a graceful stop waits for it (up to `graceMs`) before releasing, so the
   * next leader never overlaps this one's shutdown.
   */
  trackWork(work: Promise<unknown>): void {
    const p = work.then(
      () => undefined,
      () => undefined,
    );
    this.work.add(p);
    void p.then(() => this.work.delete(p));
  }

  /**
   * Stops campaigning. A leader first aborts its term's signal, keeps renewing while tracked work
   * finishes (at most `graceMs`), then releases (`release: true`, the default) so a follower can
   * take over at once; `release: false` lets the lease run out instead.
   */
  async stop(options: { release?: boolean; graceMs?: number } = {}): Promise<void> {
    if (!this.loop) {
      this.phase = "stopped";
      return;
    }
    if (!this.stopping) {
      this.stopping = true;
      const h = this.held;
      if (h) {
        h.controller.abort(new LeadershipLostError(h.stored.record.term, "stopping"));
        if (this.work.size > 0) {
          const grace = new AbortController();
          await Promise.race([
            Promise.all([...this.work]),
            this.clock.sleep(options.graceMs ?? this.graceMs, grace.signal),
          ]);
          grace.abort();
        }
      }
      this.releaseOnStop = options.release ?? true;
      this.stopRequested = true;
      this.wake();
    }
    await this.loop;
  }

  private async run(): Promise<void> {
    try {
      while (!this.stopRequested) {
        if (this.held) await this.leaderStep(this.held);
        else await this.followerStep();
      }
      if (this.held) {
        if (this.releaseOnStop) await this.release(this.held);
        if (this.held) this.lose(this.releaseOnStop ? "released" : "stopped");
      }
    } finally {
      this.watchAbort?.abort();
      this.phase = "stopped";
    }
  }

  // ---- leader ----

  private async leaderStep(h: Held): Promise<void> {
    await this.wait(h.nextAt - this.clock.now());
    if (this.stopRequested || this.held !== h) return;
    const sentAt = this.clock.now();
    if (sentAt >= h.until) return this.lose("expired");
    const next: LeaseRecord = {
      ...h.stored.record,
      holder: this.identity,
      leaseMs: this.leaseMs,
      metadata: this.metadata,
      renewedAt: this.clock.wallNow(),
      writeId: newWriteId(),
    };
    const outcome = await this.writer.write(next, h.stored.revision, { timeoutMs: h.until - sentAt });
    if (this.held !== h) return; // the watchdog ended this term while the call was out
    if (outcome.kind === "applied") {
      this.adopt(h, outcome.stored, outcome.sentAt);
      this.emit("renewed", { term: next.term, revision: outcome.stored.revision });
    } else if (outcome.kind === "lost") {
      this.lose("conflict");
      this.observe(outcome.current);
    } else {
      this.emit("error", { error: outcome.error, during: "renew" });
      h.nextAt = Math.min(this.clock.now() + this.retryDelay(), h.until);
    }
  }

  private adopt(h: Held, stored: Stored, sentAt: number): void {
    h.stored = stored;
    h.sentAt = sentAt;
    h.until = sentAt + stored.record.leaseMs - this.safetyMs;
    h.nextAt = sentAt + this.renewMs;
    this.armWatchdog(h);
  }

  private armWatchdog(h: Held): void {
    h.watchdog.abort();
    const watchdog = new AbortController();
    h.watchdog = watchdog;
    void this.clock.sleep(h.until - this.clock.now(), watchdog.signal).then(() => {
      if (!watchdog.signal.aborted && this.held === h) {
        this.lose("expired");
        this.wake();
      }
    });
  }

  /** One of our writes produced `stored`: lead with it, unless what it says or when rules that out. */
  private becomeLeader(stored: Stored, sentAt: number): void {
    // A term we already led and lost is over: an ambiguous renewal of it that turns out to have
    // landed must not make us its leader again (a second `elected` reusing a fencing token).
    const ended = stored.record.term <= this.lastLedTerm;
    const ours = stored.record.holder === this.identity;
    if (ended || !ours || this.clock.now() >= sentAt + stored.record.leaseMs - this.safetyMs) {
      // Our write landed but its safe window has already closed (or its term has ended, or it was
      // a release): not leader; it may be taken over (by us too, with a new term) once it has
      // expired for everyone.
      this.writer.forget();
      this.observed = { stored, at: sentAt };
      this.needsRead = false;
      this.noteLeader(stored);
      return;
    }
    const h: Held = {
      stored,
      sentAt,
      until: 0,
      nextAt: 0,
      controller: new AbortController(),
      watchdog: new AbortController(),
    };
    this.held = h;
    this.lastLedTerm = stored.record.term;
    this.phase = "leader";
    this.adopt(h, stored, sentAt);
    this.noteLeader(stored);
    // Elected while stop() was starting: hand out an already-aborted signal, then release.
    if (this.stopping) h.controller.abort(new LeadershipLostError(stored.record.term, "stopping"));
    this.emit("elected", {
      term: stored.record.term,
      record: stored.record,
      signal: h.controller.signal,
      stillLeader: () => this.stillLeader(h),
    });
  }

  /**
   * The clock-checked leader test for term `h`. A closed window found here ends the term at once
   * (its signal aborts now), instead of when the watchdog's timer gets to run.
   */
  private stillLeader(h: Held): boolean {
    if (this.held !== h || h.controller.signal.aborted) return false;
    if (this.clock.now() < h.until) return true;
    this.lose("expired");
    this.wake();
    return false;
  }

  private lose(reason: LossReason): void {
    const h = this.held;
    if (!h) return;
    this.held = undefined;
    this.phase = this.stopRequested ? "stopped" : "follower";
    h.watchdog.abort();
    const term = h.stored.record.term;
    h.controller.abort(new LeadershipLostError(term, reason));
    // What we last wrote is what followers see; observing it now keeps the expiry rule honest.
    this.observed = { stored: h.stored, at: h.sentAt };
    this.needsRead = true;
    this.emit("deposed", { term, reason });
  }

  /** Writes `holder: null`, keeping the term. Retries against our own newer revision, never blindly. */
  private async release(h: Held): Promise<void> {
    for (let attempt = 0; attempt < 5 && this.held === h; attempt++) {
      const sentAt = this.clock.now();
      if (sentAt >= h.until) return; // the lease runs out by itself; a late write could only confuse
      const next: LeaseRecord = {
        ...h.stored.record,
        holder: null,
        renewedAt: this.clock.wallNow(),
        writeId: newWriteId(),
      };
      const outcome = await this.writer.write(next, h.stored.revision, { timeoutMs: h.until - sentAt });
      if (this.held !== h) return;
      if (outcome.kind === "applied") {
        if (outcome.stored.record.holder === null) {
          this.observed = { stored: outcome.stored, at: this.clock.now() };
          return;
        }
        // An earlier renewal of ours landed meanwhile: release again on top of it.
        this.adopt(h, outcome.stored, outcome.sentAt);
        continue;
      }
      if (outcome.kind === "lost") return this.lose("conflict");
      this.emit("error", { error: outcome.error, during: "release" });
      await this.clock.sleep(Math.min(this.retryDelay() / 4, Math.max(0, h.until - this.clock.now())));
    }
  }

  // ---- follower ----

  private async followerStep(): Promise<void> {
    if (this.stopping) {
      await this.wait(Number.POSITIVE_INFINITY);
      return;
    }
    if (this.needsRead) {
      const admitted = await this.lane.admit("poll");
      const read = await this.read().finally(admitted);
      if (!read.ok) {
        await this.wait(this.retryDelay());
        return;
      }
      this.needsRead = false;
      this.observe(read.stored);
    }
    const observed = this.observed;
    if (!observed) return;
    // A record, read or pushed, that shows one of our unknown writes means that write applied:
    // we hold what it wrote (never wait out our own lease as if someone else held it).
    const mine = this.writer.recognise(observed.stored);
    if (mine) return this.becomeLeader(mine.stored, mine.sentAt);
    const takeoverAt = this.takeoverAt(observed);
    const now = this.clock.now();
    if (now < takeoverAt) {
      // With a live push stream a poll is only a safety net (a stream can stall silently), once
      // per lease period instead of every retry: followers then cost no reads in steady state.
      const pollAt = now + (this.watchLive ? Math.max(this.retryDelay(), this.leaseMs) : this.retryDelay());
      await this.wait(Math.min(pollAt, takeoverAt) - now);
      if (this.stopping || this.held) return;
      // Woken by the watch, or the poll came first: read again. At takeoverAt: go straight to the CAS.
      if (this.clock.now() < takeoverAt || this.observed !== observed) {
        this.needsRead = this.observed === observed;
        return;
      }
    }
    await this.acquire(observed.stored);
  }

  /** When the observed lease may be taken: now if free, else after the holder's leaseMs of no change. */
  private takeoverAt(o: Observed): number {
    const r = o.stored?.record;
    if (!r || r.holder === null) return o.at;
    // A record already stale by its own wall-clock stamp (plus the skew bound) need not be waited out.
    if (r.renewedAt + r.leaseMs + this.maxSkewMs < this.clock.wallNow()) return o.at;
    return o.at + r.leaseMs;
  }

  private async acquire(current: Stored | null): Promise<void> {
    const admitted = await this.lane.admit("acquire");
    const wall = this.clock.wallNow();
    const next: LeaseRecord = {
      name: this.name,
      holder: this.identity,
      term: (current?.record.term ?? 0) + 1,
      leaseMs: this.leaseMs,
      acquiredAt: wall,
      renewedAt: wall,
      metadata: this.metadata,
      writeId: newWriteId(),
    };
    const outcome = await this.writer.write(next, current?.revision ?? null).finally(admitted);
    if (this.stopRequested && outcome.kind !== "applied") return;
    if (outcome.kind === "applied") this.becomeLeader(outcome.stored, outcome.sentAt);
    else if (outcome.kind === "lost") this.observe(outcome.current);
    else {
      this.emit("error", { error: outcome.error, during: "acquire" });
      this.needsRead = true;
      await this.wait(this.retryDelay());
    }
  }

  private observe(stored: Stored | null | undefined): void {
    if (stored === undefined) {
      this.needsRead = true;
      return;
    }
    if (this.observed === undefined || this.observed.stored?.revision !== stored?.revision) {
      this.observed = { stored, at: this.clock.now() };
    }
    this.noteLeader(stored);
  }

  private noteLeader(stored: Stored | null): void {
    const holder = stored?.record.holder ?? null;
    const term = stored?.record.term ?? 0;
    if (this.lastLeader?.holder === holder && this.lastLeader.term === term) return;
    this.lastLeader = { holder, term };
    this.emit("leader", { holder, term });
  }

  // ---- store calls ----

  private async read(): Promise<{ ok: true; stored: Stored | null } | { ok: false }> {
    try {
      return { ok: true, stored: await this.writer.read() };
    } catch (error) {
      this.emit("error", { error, during: "read" });
      return { ok: false };
    }
  }

  // ---- scheduling ----

  private retryDelay(): number {
    return this.retryMs * (1 + this.jitter * this.random());
  }

  /** Sleeps up to `ms`, cut short by stop() or a pushed change. */
  private async wait(ms: number): Promise<void> {
    if (this.stopRequested || ms <= 0) return;
    const cut = new AbortController();
    this.wakeLoop = () => cut.abort();
    await this.clock.sleep(ms, cut.signal);
    this.wakeLoop = undefined;
    cut.abort();
  }

  private wake(): void {
    this.wakeLoop?.();
  }

  /** With a store that pushes changes, a follower learns of a release the moment it is written. */
  private startWatch(): void {
    const watch = this.store.watch;
    if (!watch) return;
    this.watchAbort = new AbortController();
    const signal = this.watchAbort.signal;
    void (async () => {
      while (!signal.aborted) {
        try {
          for await (const stored of watch.call(this.store, this.name, signal)) {
            this.watchLive = true;
            if (this.held || this.stopping) continue;
            const before = this.observed;
            this.observe(stored);
            if (this.observed !== before) {
              this.needsRead = false;
              this.wake();
            }
          }
        } catch (error) {
          if (!signal.aborted) this.emit("error", { error, during: "read" });
        }
        this.watchLive = false;
        if (!signal.aborted) await this.clock.sleep(this.retryDelay(), signal);
      }
    })();
  }

  private emit<K extends keyof ElectorEvents>(type: K, event: ElectorEvents[K]): void {
    this.events.emit(type, event);
  }
}
