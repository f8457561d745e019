/**
 * A candidate that keeps its lease by renewing the lease's own record (`new Elector({ session:
 * false })`, docs/design.md §3, §4): one conditional write per lease per renewal, as client-go and
 * the lock clients do. The lease rules (establish by CAS with term + 1, the window
 * `sentAt + leaseMs - safetyMs` on the monotonic clock, the watchdog, ambiguous writes resolved by
 * `writeId`, observed-time takeover, release) are the lease-holder core's (./holder.ts). This layer
 * adds what a leader's code sees: a signal per term, `stillLeader()`, the `elected`, `deposed` and
 * `leader` events, and a graceful stop that waits for the leader's work before the core releases,
 * so the next leader never overlaps this one's shutdown.
 *
 * Runtime-neutral: no Node-only API.
 */
import { type Clock, systemClock } from "../clock.js";
import { isStoreContractError, LeadershipLostError } from "../errors.js";
import { newWriteId, type Stored } from "../lease.js";
import { Emitter, LeaderNotice, type Listener } from "./events.js";
import { LeaseHolder } from "./holder.js";
import type { Lane } from "./lane.js";
import { LeaderWork } from "./leader-work.js";
import { defaultLane } from "./load-lane.js";
import type { ResolvedElectorOptions } from "./options.js";
import type { Candidate, CandidateOptions, ElectorEvents, ElectorPhase, ElectorState } from "./types.js";

export class RenewingElector implements Candidate {
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

  constructor(o: ResolvedElectorOptions, options: CandidateOptions) {
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
