/**
 * The elector (docs/design.md §3, §4): one candidate for one lease.
 *
 * The lease rules (establish by CAS with term + 1, one conditional write per renewal, the window
 * `sentAt + leaseMs - safetyMs` on the monotonic clock, the watchdog, ambiguous writes resolved by
 * `writeId`, observed-time takeover, release) are the lease-holder core's (./elector/holder.ts).
 * The elector adds what a leader's code sees: a signal per term, `stillLeader()`, the `elected`,
 * `deposed` and `leader` events, and a graceful stop that waits for the leader's work before the
 * core releases, so the next leader never overlaps this one's shutdown.
 *
 * Runtime-neutral: no Node-only API.
 */
import { type Clock, systemClock } from "./clock.js";
import { Emitter, LeaderNotice, type Listener } from "./elector/events.js";
import { LeaseHolder } from "./elector/holder.js";
import type { Lane } from "./elector/lane.js";
import { LeaderWork } from "./elector/leader-work.js";
import { defaultLane } from "./elector/load-lane.js";
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
  /** Back-off after a failed store call, and the base of the delay before campaigning again after a lost term. Default leaseMs / 7.5 (2 s for 15 s). */
  retryMs?: number;
  /**
   * While waiting for a held lease to expire, how often a follower reads it to learn of an early
   * release. The takeover itself is scheduled for the exact expiry observed and needs no poll; a
   * store that pushes changes tells sooner. Default 1000 (the lock clients' pace, whatever leaseMs).
   */
  pollMs?: number;
  /** Margin a leader gives up before its lease could expire elsewhere (clock rate drift, timer lateness). Default leaseMs / 10. */
  safetyMs?: number;
  /** Retries wait retryMs * (1 + jitter * random); 0 disables. Default 0.2. */
  jitter?: number;
  /** Bound on wall-clock skew between machines, for the fresh-candidate shortcut (docs/design.md §3, §7). Default 1000. */
  maxSkewMs?: number;
  /** Longest a store call may take before it counts as ambiguous. Default renewMs, at most half of leaseMs - safetyMs - renewMs (two renewal attempts fit: docs/partitions.md). */
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

export class Elector {
  readonly name: string;
  readonly identity: string;
  readonly leaseMs: number;
  readonly renewMs: number;
  readonly retryMs: number;
  readonly pollMs: number;
  readonly safetyMs: number;
  private readonly clock: Clock;
  private readonly graceMs: number;
  /** The lease rules: establishing, renewing, the window, takeover, release (./elector/holder.ts). */
  private readonly holder: LeaseHolder;

  private started = false;
  private stopping = false;
  private stopped: Promise<void> | undefined;
  /** The current term's signal (aborted when it ends or stop begins). */
  private term: { term: number; controller: AbortController } | undefined;
  private readonly leaderNotice = new LeaderNotice((seen) => this.events.emit("leader", seen));
  private readonly work = new LeaderWork();
  private readonly events = new Emitter<ElectorEvents>();
  /** Admits follower-side calls; renewals never ask it (renewals first). */
  readonly lane: Lane;

  constructor(options: ElectorOptions) {
    const o = resolveElectorOptions(options);
    this.name = o.name;
    this.identity = o.identity ?? `candidate-${newWriteId().slice(0, 8)}`;
    this.leaseMs = o.leaseMs;
    this.renewMs = o.renewMs;
    this.retryMs = o.retryMs;
    this.pollMs = o.pollMs;
    this.safetyMs = o.safetyMs;
    this.graceMs = o.graceMs;
    this.clock = options.clock ?? systemClock;
    this.lane = options.lane ?? defaultLane(this.clock);
    this.holder = new LeaseHolder({
      ...o,
      store: options.store,
      identity: this.identity,
      clock: this.clock,
      random: options.random ?? Math.random,
      watch: true,
      lane: this.lane,
    });
    this.holder.on("established", ({ stored }) => this.elected(stored));
    this.holder.on("lost", ({ term, reason }) => {
      const t = this.term;
      this.term = undefined;
      t?.controller.abort(new LeadershipLostError(term, reason));
      this.events.emit("deposed", { term, reason });
    });
    this.holder.on("observed", ({ stored }) => this.noteLeader(stored));
    this.holder.on("renewed", (event) => this.events.emit("renewed", event));
    this.holder.on("error", (event) => {
      this.events.emit("error", event);
      // A store that cannot keep the contract (StoreContractError) does not get better by
      // retrying: campaigning stops (a term held ends without a release).
      if (isStoreContractError(event.error)) void this.holder.stop({ release: false });
    });
  }

  /** Subscribes to an event; returns the unsubscribe function. */
  on<K extends keyof ElectorEvents>(type: K, listener: Listener<ElectorEvents[K]>): () => void {
    return this.events.on(type, listener);
  }

  /** A snapshot; `isLeader` is computed from the clock at the moment of asking. */
  get current(): ElectorState {
    const held = this.holder.peek();
    const seen = this.holder.observed?.record;
    return {
      phase: this.phase(held !== undefined),
      isLeader: held !== undefined && this.clock.now() < held.until,
      holder: held ? this.identity : (seen?.holder ?? null),
      term: held ? held.term : (seen?.term ?? 0),
      leaderUntil: held?.until,
      lastRenewalSentAt: held?.sentAt,
    };
  }

  /** The signal of the current term, when leader. */
  get signal(): AbortSignal | undefined {
    return this.term?.controller.signal;
  }

  /** Starts campaigning. Idempotent. */
  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.holder.start();
  }

  /**
   * Registers leader work: a graceful stop waits for it (up to `graceMs`) before releasing, so the
   * next leader never overlaps this one's shutdown.
   */
  trackWork(work: Promise<unknown>): void {
    this.work.track(work);
  }

  /**
   * Stops campaigning. A leader first aborts its term's signal, keeps renewing while tracked work
   * finishes (at most `graceMs`), then releases (`release: true`, the default) so a follower can
   * take over at once; `release: false` lets the lease run out instead.
   */
  stop(options: { release?: boolean; graceMs?: number } = {}): Promise<void> {
    this.stopped ??= this.stopOnce(options);
    return this.stopped;
  }

  private async stopOnce(options: { release?: boolean; graceMs?: number }): Promise<void> {
    this.stopping = true;
    this.holder.standDown();
    const t = this.term;
    if (t && this.started) {
      t.controller.abort(new LeadershipLostError(t.term, "stopping"));
      await this.work.drain(this.clock, options.graceMs ?? this.graceMs);
    }
    await this.holder.stop({ release: options.release ?? true });
  }

  private phase(held: boolean): ElectorPhase {
    if (!this.started) return this.stopping ? "stopped" : "idle";
    if (this.holder.finished) return "stopped";
    if (held) return "leader";
    return this.holder.stopping ? "stopped" : "follower";
  }

  private elected(stored: Stored): void {
    const term = stored.record.term;
    const controller = new AbortController();
    this.term = { term, controller };
    this.noteLeader(stored);
    // Elected while stop() was starting: hand out an already-aborted signal, then release.
    if (this.stopping) controller.abort(new LeadershipLostError(term, "stopping"));
    this.events.emit("elected", {
      term,
      record: stored.record,
      signal: controller.signal,
      // The clock-checked leader test: a closed window found here ends the term at once.
      stillLeader: () => !controller.signal.aborted && this.holder.validTerm() === term,
    });
  }

  private noteLeader(stored: Stored | null): void {
    this.leaderNotice.note(stored);
  }
}
