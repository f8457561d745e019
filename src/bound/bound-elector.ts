/**
 * A candidate for one lease bound to its process's session (docs/design.md §4 "Bound leases"):
 * the same public surface as `Elector` (events, `current`, `signal`, `start`, `stop`,
 * `trackWork`), so `runLeader`, metrics and benches take either, but the lease is never renewed
 * on its own: its record names the session (`leasehold.session` = `<session>@<term>`) and is
 * valid exactly as long as that session term is.
 *
 * - Leader of lease L at term T while the session term it acquired L under is valid (read from
 *   the monotonic clock when asked: `stillLeader()`), and it has not seen L taken. When that
 *   session term ends (expired, fenced, released) every lease bound to it ends at once; a new
 *   session term never inherits a lease: it leads L again only after a new compare-and-swap on L
 *   (term + 1).
 * - The lease record is written only to acquire (term + 1), to release (term kept), to hand over
 *   (term + 1, to a registered successor), and by a follower registering as successor.
 * - A follower judges L by the session it names (src/bound/observer.ts): over (a later term of
 *   that session, or released or fenced): take L at once; expired by observed time or by its
 *   stamps: fence the session first, then take L; live: look again just after its owner's next
 *   renewal is due, or when it could expire (./look-schedule.ts). A plain
 *   record (no session named) is judged by the core's rule (`plainTakeoverAt`).
 * - It follows the core's pacing (src/elector/follower-rules.ts): it reads L every `pollMs`
 *   (whatever wakes it meanwhile: a session renewal never restarts that timer), or, when the
 *   session L names counts its releases (`releases`), only when that count or the session's term
 *   moved after its last read of L (its looks at the session are its polls), asks the lane
 *   before each read of L and each write to take or register for it, and after a lost term waits
 *   the core's back-off before campaigning again.
 * - Hand-over: a waiting follower writes itself into L as its `successor` (possible because L is
 *   not rewritten by renewals). A graceful stop writes L with that successor as holder, under its
 *   session, term + 1 (one write; then one more of its session's count of releases, if the
 *   session stays open); the successor learns it by push, its next poll, or the count at its next
 *   look, and leads at once under its own valid session. Only to a successor whose session the
 *   releaser has just seen live; otherwise it releases plainly.
 *
 * All store calls for L run one at a time from one loop (a release never races an acquisition).
 * Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { CasWriter } from "../elector/cas.js";
import { Emitter, LeaderNotice, type Listener } from "../elector/events.js";
import { admitCall, jittered, LossBackoff, plainTakeoverAt, Waker } from "../elector/follower-rules.js";
import type { Lane, LaneKind, LaneRelease } from "../elector/lane.js";
import { LeaderWork } from "../elector/leader-work.js";
import type { ResolvedTiming } from "../elector/options.js";
import { MAX_PUSH_BACKOFF_MS, PushFollower } from "../elector/push-follower.js";
import { releaseAttempts } from "../elector/release-attempts.js";
import { ElectorLoop } from "../elector/run-loop.js";
import type { ElectorEvents, ElectorPhase, ElectorState } from "../elector/types.js";
import { isLeaseStillHeldError, LeadershipLostError, type LossReason } from "../errors.js";
import { type LeaseRecord, type LeaseStore, newWriteId, releasedRecord, type Stored } from "../lease.js";
import type { SessionObserver } from "./observer.js";
import {
  type SessionRef,
  type Successor,
  sameRef,
  sameSuccessor,
  sessionOf,
  successorOf,
  withoutSuccessor,
} from "./refs.js";

/** What a bound elector needs of its session (`LeaseSession` implements it). */
export interface SessionPort {
  readonly name: string;
  readonly identity: string;
  readonly store: LeaseStore;
  readonly clock: Clock;
  readonly observer: SessionObserver;
  readonly timing: ResolvedTiming;
  readonly pollMs: number;
  readonly lane: Lane;
  readonly random: () => number;
  validTerm(): number | undefined;
  peek(): { term: number; until: number } | undefined;
  onSession(listener: (event: SessionChange) => void): () => void;
  /** The highest term of lease `name` this process wrote for itself or led: never taken as a hand-over. */
  claimed(name: string): number;
  claim(name: string, term: number): void;
  /** Takes back the claim of `term` (a write of it certainly not applied), restoring `before`. */
  unclaim(name: string, term: number, before: number): void;
  /** A lease bound to the session was released or handed over (its followers read theirs). */
  noteRelease(): void;
  detach(elector: object): void;
}

export type SessionChange =
  | { kind: "established"; term: number }
  | { kind: "renewed"; term: number }
  | { kind: "lost"; term: number; reason: LossReason };

export interface ResolvedBoundOptions {
  name: string;
  metadata: Record<string, string>;
  graceMs: number;
  handover: boolean;
}

interface Held {
  stored: Stored;
  /** The session term L was acquired (or handed over) under: L is led only while it is valid. */
  sessionTerm: number;
  controller: AbortController;
  /** Monotonic time it was led from: a tenure that lived a lease ends a run of losses. */
  since: number;
}

/** A successor whose session the releaser saw live, and when (monotonic). */
interface Checked {
  successor: Successor;
  at: number;
}

type Plan =
  | { kind: "acquire" }
  | { kind: "lead" }
  | { kind: "register" }
  /** Read L now: the session it is bound to counts a release since L was last read. */
  | { kind: "read" }
  /** `signalled`: L's session counts its releases, so L is read only when that count moves. */
  | { kind: "wait"; until: number; signalled?: boolean };

export class BoundElector extends ElectorLoop<Held> {
  readonly name: string;
  readonly identity: string;
  readonly leaseMs: number;
  readonly renewMs: number;
  readonly retryMs: number;
  readonly safetyMs: number;
  private readonly session: SessionPort;
  private readonly o: ResolvedBoundOptions;
  private readonly writer: CasWriter;
  private readonly events = new Emitter<ElectorEvents>();
  private phase: ElectorPhase = "idle";
  private readonly leaderNotice = new LeaderNotice((seen) => this.events.emit("leader", seen));
  private lastLedTerm = 0;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private readonly waker: Waker;
  /** Aborted by stop: a follower's call waiting for the lane goes no further. */
  private readonly halt = new AbortController();
  /** When the follower reads L next (monotonic), set by each answer of the store about L. */
  private nextPollAt = 0;
  /** When the latest read of L that was answered was sent (monotonic). */
  private readSentAt = Number.NEGATIVE_INFINITY;
  /** The back-off after lost tenures (the core's, ../elector/follower-rules.ts). */
  private readonly backoff = new LossBackoff();
  private readonly work = new LeaderWork();
  private readonly push: PushFollower;
  /** The store refused a candidacy write (the HTTP API lets only a lease's holder process write it). */
  private candidacyRefused = false;
  private handoverCheck: Promise<Checked | undefined> | undefined;
  private offSession: (() => void) | undefined;

  constructor(session: SessionPort, options: ResolvedBoundOptions) {
    super(session.clock);
    this.session = session;
    this.o = options;
    this.name = options.name;
    this.identity = session.identity;
    this.leaseMs = session.timing.leaseMs;
    this.renewMs = session.timing.renewMs;
    this.retryMs = session.timing.retryMs;
    this.safetyMs = session.timing.safetyMs;
    this.waker = new Waker(session.clock);
    this.writer = new CasWriter({
      store: session.store,
      name: options.name,
      clock: session.clock,
      callTimeoutMs: session.timing.callTimeoutMs,
    });
    this.push = new PushFollower({
      store: session.store,
      name: options.name,
      clock: session.clock,
      random: session.random,
      retryMs: this.retryMs,
      jitter: session.timing.jitter,
      maxBackoffMs: MAX_PUSH_BACKOFF_MS,
      onRecord: (stored) => this.pushed(stored),
      onError: (error) => this.events.emit("error", { error, during: "read" }),
    });
  }

  on<K extends keyof ElectorEvents>(type: K, listener: Listener<ElectorEvents[K]>): () => void {
    return this.events.on(type, listener);
  }

  /** A snapshot; `isLeader` reads the clock and the session at the moment of asking. */
  get current(): ElectorState {
    const h = this.held;
    const s = this.session.peek();
    const mine = h !== undefined && s !== undefined && s.term === h.sessionTerm;
    const r = h ? h.stored.record : this.seen?.stored?.record;
    return {
      phase: this.phase,
      isLeader: mine && this.session.clock.now() < s.until,
      holder: h ? this.identity : (r?.holder ?? null),
      term: r?.term ?? 0,
      leaderUntil: mine ? s.until : undefined,
      lastRenewalSentAt: mine ? s.until - this.leaseMs + this.safetyMs : undefined,
    };
  }

  get signal(): AbortSignal | undefined {
    return this.held?.controller.signal;
  }

  start(): void {
    if (this.loop) return;
    this.phase = "follower";
    this.offSession = this.session.onSession((change) => this.onSession(change));
    this.loop = this.run();
  }

  trackWork(work: Promise<unknown>): void {
    this.work.track(work);
  }

  /**
   * Stops campaigning. A leader aborts its signal, waits for tracked work (at most `graceMs`),
   * then hands the lease to a registered successor whose session is live, or releases it
   * (`release: true`, the default); `release: false` leaves it bound to the session, so it ends
   * when the session does. A follower withdraws its candidacy.
   */
  async stop(options: { release?: boolean; graceMs?: number } = {}): Promise<void> {
    if (!this.loop) {
      this.phase = "stopped";
      this.session.detach(this);
      return;
    }
    if (!this.stopping) {
      this.stopping = true;
      this.halt.abort("stopping");
      this.releaseOnStop = options.release ?? true;
      const h = this.held;
      if (h) {
        h.controller.abort(new LeadershipLostError(h.stored.record.term, "stopping"));
        // Who to hand over to is found while the work drains: only the write is left for after.
        if (this.releaseOnStop && this.o.handover) this.handoverCheck = this.checkSuccessor(h);
        await this.work.drain(this.session.clock, options.graceMs ?? this.o.graceMs);
      }
      this.stopRequested = true;
      this.wake();
    }
    await this.loop;
  }

  private async run(): Promise<void> {
    try {
      const lost = await this.runUntilStopped();
      if (!lost && this.o.handover) await this.withdraw();
    } finally {
      this.push.close();
      this.offSession?.();
      this.phase = "stopped";
      this.session.detach(this);
    }
  }

  private onSession(change: SessionChange): void {
    const h = this.held;
    if (change.kind === "lost" && h?.sessionTerm === change.term) this.lose(change.reason);
    else if (change.kind === "renewed" && h?.sessionTerm === change.term) {
      this.events.emit("renewed", { term: h.stored.record.term, revision: h.stored.revision });
    }
    // A renewal of our own session changes nothing for a follower: only its start or end wakes
    // one (a wake re-plans; the poll timer runs on regardless).
    if (!this.held && change.kind !== "renewed") this.wake();
  }

  // ---- leader ----

  protected async leaderStep(h: Held): Promise<void> {
    // Nothing to write: the session's renewals keep this lease. Woken by a loss, a push or stop.
    await this.wait(Number.POSITIVE_INFINITY);
    if (this.held === h && !this.stopRequested && this.session.validTerm() !== h.sessionTerm) this.lose("expired");
  }

  private becomeLeader(stored: Stored, sessionTerm: number): void {
    const h: Held = { stored, sessionTerm, controller: new AbortController(), since: this.session.clock.now() };
    this.held = h;
    this.push.close(); // a leader needs no stream (src/elector/push-follower.ts)
    this.lastLedTerm = stored.record.term;
    this.session.claim(this.name, stored.record.term);
    this.phase = "leader";
    this.noteLeader(stored);
    if (this.stopping) h.controller.abort(new LeadershipLostError(stored.record.term, "stopping"));
    this.events.emit("elected", {
      term: stored.record.term,
      record: stored.record,
      signal: h.controller.signal,
      stillLeader: () => this.stillLeader(h),
    });
  }

  private stillLeader(h: Held): boolean {
    if (this.held !== h || h.controller.signal.aborted) return false;
    // validTerm() ends a session whose window has closed (its `lost` then ends this lease).
    if (this.session.validTerm() === h.sessionTerm) return true;
    this.lose("expired");
    return false;
  }

  protected lose(reason: LossReason): void {
    const h = this.held;
    if (!h) return;
    this.held = undefined;
    this.phase = this.stopRequested ? "stopped" : "follower";
    const term = h.stored.record.term;
    h.controller.abort(new LeadershipLostError(term, reason));
    const now = this.session.clock.now();
    if (reason === "expired" || reason === "conflict") {
      this.backoff.lost(now, h.since, this.pace());
    }
    this.seen = { stored: h.stored, at: now };
    this.needsRead = true;
    this.events.emit("deposed", { term, reason });
    this.wake();
  }

  /** Still this tenure (holder, term and session unchanged; a registration may have been added). */
  private isMyTenure(h: Held, stored: Stored | null | undefined): boolean {
    const r = stored?.record;
    return (
      r !== undefined &&
      r.holder === this.identity &&
      r.term === h.stored.record.term &&
      sameRef(sessionOf(r), sessionOf(h.stored.record))
    );
  }

  /** Reads L and the registered successor's session while the leader's work drains. */
  private async checkSuccessor(h: Held): Promise<Checked | undefined> {
    try {
      const stored = await this.writer.read();
      if (stored && this.isMyTenure(h, stored)) h.stored = stored;
      return await this.checked(h.stored);
    } catch {
      return undefined; // a plain release then
    }
  }

  /** The successor `stored` names, if its session is live by a read sent just now. */
  private async checked(stored: Stored): Promise<Checked | undefined> {
    const successor = successorOf(stored.record);
    if (!successor || (successor.holder === this.identity && successor.session.name === this.session.name)) {
      return undefined;
    }
    const at = this.session.clock.now();
    const obs = await this.session.observer.look(successor.session.name, at);
    const r = obs.stored?.record;
    const live =
      r !== undefined &&
      r.holder === successor.holder &&
      r.term === successor.session.term &&
      this.session.clock.wallNow() < r.renewedAt + r.leaseMs;
    return live ? { successor, at } : undefined;
  }

  /**
   * Hands L to the checked successor (term + 1, under its session) or releases it (holder null,
   * term kept), by compare-and-swap on the revision this tenure last saw. A conflict that only
   * added a registration is decided again on the new revision.
   */
  protected async release(h: Held): Promise<void> {
    let check = await this.handoverCheck?.catch(() => undefined);
    await releaseAttempts({
      writer: this.writer,
      clock: this.session.clock,
      holding: () => this.held === h,
      // The lease ends with its session: nothing is sent once that term is no longer valid.
      until: () => (this.session.validTerm() === h.sessionTerm ? (this.session.peek()?.until ?? 0) : 0),
      next: () => {
        const r = h.stored.record;
        const to = check && sameSuccessor(check.successor, successorOf(r)) ? check.successor : undefined;
        const wall = this.session.clock.wallNow();
        const record: LeaseRecord = to
          ? {
              ...withoutSuccessor(r),
              holder: to.holder,
              term: r.term + 1,
              acquiredAt: wall,
              renewedAt: wall,
              metadata: {},
              session: to.session,
              writeId: newWriteId(),
            }
          : releasedRecord(r, wall);
        return { record, revision: h.stored.revision };
      },
      applied: (stored, _sentAt, sent) => {
        if (stored.record.writeId === sent.writeId || !this.isMyTenure(h, stored)) {
          this.seen = { stored, at: this.session.clock.now() };
          // Followers that look at our session, not at L, learn of it from the count.
          if (stored.record.writeId === sent.writeId) this.session.noteRelease();
          return "done";
        }
        h.stored = stored; // an earlier write of ours landed meanwhile: again on top of it
        return "again";
      },
      lost: async (known) => {
        const current = known === undefined ? await this.writer.read().catch(() => undefined) : known;
        if (!current || !this.isMyTenure(h, current)) {
          this.lose("conflict");
          return "done";
        }
        h.stored = current; // a follower registered meanwhile
        if (this.o.handover) check = await this.checked(current).catch(() => undefined);
        return "again";
      },
      failed: (error) => this.events.emit("error", { error, during: "release" }),
      retryDelay: () => this.retryDelay(),
    });
  }

  // ---- follower ----

  protected async followerStep(): Promise<void> {
    if (this.stopping) return this.wait(Number.POSITIVE_INFINITY);
    if (this.needsRead) {
      const done = await this.admit("poll");
      if (!done) return;
      const sentAt = this.session.clock.now();
      try {
        this.observe(await this.writer.read().finally(done));
        this.readSentAt = sentAt;
      } catch (error) {
        this.events.emit("error", { error, during: "read" });
        return this.wait(this.retryDelay());
      }
      this.needsRead = false;
      this.polled();
    }
    const o = this.seen;
    if (!o) return;
    const mine = this.writer.recognise(o.stored);
    if (mine) return this.fromOwnWrite(mine.stored);
    let plan: Plan;
    try {
      plan = await this.plan(o.stored, o.at);
    } catch (error) {
      this.events.emit("error", { error, during: "read" });
      return this.wait(this.retryDelay());
    }
    if (this.stopping || this.held || this.seen !== o) return;
    const now = this.session.clock.now();
    // After a lost tenure, no write to take L before the back-off (a hand-over to us is no write).
    if ((plan.kind === "acquire" || plan.kind === "register") && now < this.backoff.notBefore) {
      plan = { kind: "wait", until: this.backoff.notBefore };
    }
    if (plan.kind === "read") {
      this.needsRead = true;
      return;
    }
    if (plan.kind === "acquire") return this.acquire(o.stored);
    if (plan.kind === "register") return this.register(o.stored!);
    if (plan.kind === "lead") return this.becomeLeader(o.stored!, this.session.validTerm()!);
    this.push.follow(); // only for a wait: a candidate about to write needs no stream
    // At least 1 ms: a plan due now always comes back through a store call, never a busy loop.
    // Whatever wakes the loop meanwhile, the poll stays due at `nextPollAt` (unless L's session
    // signals its releases: then its looks stand in for polls).
    const pollAt = plan.signalled ? Number.POSITIVE_INFINITY : this.nextPollAt;
    await this.wait(Math.max(1, Math.min(pollAt, plan.until) - now));
    if (this.seen === o && this.session.clock.now() >= pollAt) this.needsRead = true;
  }

  /** The store just answered about L: the next read is due a poll from now (once a lease with a live stream). */
  private polled(): void {
    const poll = jittered(this.session.pollMs, this.pace());
    this.nextPollAt = this.session.clock.now() + (this.push.live ? Math.max(poll, this.leaseMs) : poll);
  }

  /**
   * What to do about L as last observed (see the header), first seen at `seenAt`. May read or
   * fence the session L names.
   */
  private async plan(stored: Stored | null, seenAt: number): Promise<Plan> {
    const now = this.session.clock.now();
    const myTerm = this.session.validTerm();
    // Without a valid session of our own nothing can be taken: wait for it (its event wakes us).
    if (myTerm === undefined) return { kind: "wait", until: now + this.retryDelay() };
    const r = stored?.record;
    if (!r || r.holder === null) return { kind: "acquire" };
    const bound = sessionOf(r);
    if (!bound) return this.planPlain(stored!);
    if (bound.name === this.session.name) {
      // Our own session: an earlier term of it is over (we ended it); the current one holds L
      // only through an elector of ours, and the session allows one per lease, so it is either a
      // hand-over to us or a tenure of ours that no elector holds any more.
      if (bound.term > myTerm) return { kind: "wait", until: now + this.retryDelay() };
      if (bound.term === myTerm && this.o.handover && r.holder === this.identity) {
        if (r.term > this.session.claimed(this.name)) return { kind: "lead" };
      }
      return { kind: "acquire" };
    }
    const observer = this.session.observer;
    // An observation older than L's record may be of an earlier tenure of that session: the
    // verdict asks for a fresher one where that matters (a record missing or of an older term).
    let obs = observer.known(bound.name) ?? (await observer.look(bound.name, now));
    let verdict = observer.verdict(bound, obs, r.leaseMs, seenAt);
    if (verdict.kind === "live" && verdict.lookAt <= now) {
      obs = await observer.look(bound.name, verdict.lookAt);
      verdict = observer.verdict(bound, obs, r.leaseMs, seenAt);
    }
    if (verdict.kind === "expired" && obs.readAt < now - this.retryMs) {
      // Judged on its stamps from an old read: see that it still stands before writing.
      obs = await observer.look(bound.name, now);
      verdict = observer.verdict(bound, obs, r.leaseMs, seenAt);
    }
    if (verdict.kind === "expired") {
      await observer.fence(verdict.stored);
      verdict = observer.verdict(bound, observer.known(bound.name)!, r.leaseMs, seenAt);
      if (verdict.kind !== "over") return { kind: "wait", until: now + this.retryDelay() };
    }
    if (verdict.kind === "over") return { kind: "acquire" };
    if (this.shouldRegister(r, myTerm)) return { kind: "register" };
    // A session that counts its releases (`releases`, written at once by its owner after it
    // released or handed over a lease bound to it) tells when L changed: read L only when that
    // count moved after L's last read. One that does not (an older version) leaves L polled.
    if (obs.stored?.record.releases === undefined) return { kind: "wait", until: verdict.lookAt };
    if (obs.releasesSince > this.readSentAt) return { kind: "read" };
    return { kind: "wait", until: verdict.lookAt, signalled: true };
  }

  /** A record with no session (written by a plain Elector): judged as the Elector judges it. */
  private planPlain(stored: Stored): Plan {
    const clock = this.session.clock;
    const now = clock.now();
    const takeoverAt = plainTakeoverAt(stored, this.seen?.at ?? now, {
      now,
      wallNow: clock.wallNow(),
      maxSkewMs: this.session.timing.maxSkewMs,
    });
    return now >= takeoverAt ? { kind: "acquire" } : { kind: "wait", until: takeoverAt };
  }

  /** Register as successor when nobody is registered, or only an earlier session of ours. */
  private shouldRegister(r: LeaseRecord, myTerm: number): boolean {
    if (!this.o.handover || this.candidacyRefused) return false;
    const next = successorOf(r);
    if (!next) return true;
    return next.session.name === this.session.name && next.holder === this.identity && next.session.term !== myTerm;
  }

  private async acquire(current: Stored | null): Promise<void> {
    const term = this.session.validTerm();
    if (term === undefined) return;
    const wall = this.session.clock.wallNow();
    const next: LeaseRecord = {
      name: this.name,
      holder: this.identity,
      term: (current?.record.term ?? 0) + 1,
      leaseMs: this.leaseMs,
      acquiredAt: wall,
      renewedAt: wall,
      metadata: this.o.metadata,
      session: { name: this.session.name, term },
      writeId: newWriteId(),
    };
    const done = await this.admit("acquire");
    if (!done) return;
    // Claimed before it is sent: our own record is never mistaken for a hand-over to us.
    const before = this.session.claimed(this.name);
    this.session.claim(this.name, next.term);
    const outcome = await this.writer.write(next, current?.revision ?? null).finally(done);
    if (outcome.kind === "applied") return this.fromOwnWrite(outcome.stored);
    if (outcome.kind === "lost") {
      // Certainly not applied (a lost compare-and-swap): no record of that term is ours, so the
      // claim goes back. The record that beat it may be a hand-over to us at that very term (the
      // releaser's write landed between our read and our write), which is then led as handed.
      this.session.unclaim(this.name, next.term, before);
      return this.lostWrite(outcome.current);
    }
    this.events.emit("error", { error: outcome.error, during: "acquire" });
    this.needsRead = true;
    await this.wait(this.retryDelay());
  }

  /** Writes this candidate into L as its successor (under our current session). */
  private async register(current: Stored): Promise<void> {
    const term = this.session.validTerm();
    const bound = sessionOf(current.record);
    if (term === undefined || !bound) return;
    const next: LeaseRecord = {
      ...current.record,
      successor: { holder: this.identity, session: { name: this.session.name, term } },
      renewedAt: this.session.clock.wallNow(),
      writeId: newWriteId(),
    };
    const done = await this.admit("acquire");
    if (!done) return;
    const outcome = await this.writer.write(next, current.revision).finally(done);
    if (outcome.kind === "applied") return this.fromOwnWrite(outcome.stored);
    if (outcome.kind === "lost") return this.lostWrite(outcome.current);
    if (isLeaseStillHeldError(outcome.error)) {
      // The store lets only the holder's process write a held lease (an API before hand-overs):
      // no hand-over here, the follower takes the lease by compare-and-swap after a release, as
      // an Elector does. Any other failure (a busy server's 503) is tried again later.
      this.candidacyRefused = true;
      return;
    }
    this.events.emit("error", { error: outcome.error, during: "acquire" });
    this.needsRead = true;
    await this.wait(this.retryDelay());
  }

  /** One of our writes produced `stored`: lead if it gave us L under our current session term. */
  private fromOwnWrite(stored: Stored): void {
    const r = stored.record;
    const term = this.session.validTerm();
    const ref = sessionOf(r);
    const ours = r.holder === this.identity && ref?.name === this.session.name && ref.term === term;
    this.seen = { stored, at: this.session.clock.now() };
    this.needsRead = false;
    this.polled();
    if (ours && term !== undefined && r.term > this.lastLedTerm && !this.stopping) this.becomeLeader(stored, term);
    else this.noteLeader(stored);
  }

  /** Stopping as a follower: takes our registration back, and releases L if it was handed to us meanwhile. */
  private async withdraw(): Promise<void> {
    let current = this.seen?.stored;
    for (let attempt = 0; attempt < 3 && current; attempt++) {
      const r = current.record;
      const term = this.session.validTerm();
      const ref = sessionOf(r);
      const handed = r.holder === this.identity && ref?.name === this.session.name && ref.term === term;
      const next = successorOf(r);
      const registered = next?.holder === this.identity && next.session.name === this.session.name;
      if (!handed && !registered) return;
      const write: LeaseRecord = handed ? releasedRecord(r, r.renewedAt) : withoutSuccessor(r);
      if (handed) this.session.claim(this.name, r.term);
      const outcome = await this.writer.write(
        { ...write, renewedAt: this.session.clock.wallNow(), writeId: newWriteId() },
        current.revision,
      );
      if (handed && outcome.kind === "applied") this.session.noteRelease();
      if (outcome.kind !== "lost") return; // applied, or unknown: a registration is only a hint
      current = outcome.current === undefined ? await this.writer.read().catch(() => undefined) : outcome.current;
    }
  }

  /** A write of ours lost its compare-and-swap: the record it carried (if any) is the store's answer. */
  private lostWrite(current: Stored | null | undefined): void {
    this.observe(current);
    if (current !== undefined) this.polled();
  }

  protected onObserved(stored: Stored | null): void {
    this.noteLeader(stored);
  }

  private noteLeader(stored: Stored | null): void {
    this.leaderNotice.note(stored);
  }

  // ---- scheduling ----

  private pace() {
    const t = this.session.timing;
    return { leaseMs: t.leaseMs, retryMs: t.retryMs, jitter: t.jitter, random: this.session.random };
  }

  private retryDelay(): number {
    return jittered(this.retryMs, this.pace());
  }

  /** The lane's admission for a follower's call on L (./holder.ts asks it the same way). */
  private admit(kind: LaneKind): Promise<LaneRelease | undefined> {
    return admitCall(
      this.session.lane,
      kind,
      this.halt.signal,
      () => !this.stopping && !this.held,
      (error) => this.events.emit("error", { error, during: kind === "poll" ? "read" : "acquire" }),
    );
  }

  private async wait(ms: number): Promise<void> {
    if (!this.stopRequested) await this.waker.sleep(ms);
  }

  private wake(): void {
    this.waker.wake();
  }

  /** A record the follower's stream yielded (a leader has no stream open; one late event is ignored). */
  private pushed(stored: Stored | null): void {
    if (this.held || this.stopping) return;
    const before = this.seen;
    this.observe(stored);
    if (this.seen !== before) {
      this.needsRead = false;
      this.wake();
    }
  }
}

export type { SessionRef };
