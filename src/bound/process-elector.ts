/**
 * The default `Elector`'s engine (docs/design.md §4 "The process session"): a candidate for one
 * lease bound to the session its process shares with every Elector of the same store, scope and
 * timing (./process-sessions.ts). The candidate itself is a `BoundElector` (./bound-elector.ts) on
 * that session: its lease is never renewed on its own, a graceful stop hands it to a waiting
 * successor in one write, and its followers read at `pollMs` through the load lane.
 *
 * This layer only keeps one surface while the session underneath may change: the session is
 * opened when the first Elector starts, and if its slot turns out to be another process's the
 * Electors move to a new one (leading nothing meanwhile). Events of every BoundElector it ran
 * reach the same listeners.
 *
 * Runtime-neutral.
 */
import { type Clock, systemClock } from "../clock.js";
import { Emitter, type Listener } from "../elector/events.js";
import type { Lane } from "../elector/lane.js";
import { defaultLane } from "../elector/load-lane.js";
import type { ResolvedElectorOptions } from "../elector/options.js";
import type { Candidate, CandidateOptions, ElectorEvents, ElectorState } from "../elector/types.js";
import { isStoreContractError } from "../errors.js";
import type { BoundElector } from "./bound-elector.js";
import { joinProcessSession, type Membership, type SessionUser } from "./process-sessions.js";
import type { LeaseSession } from "./session.js";

export class ProcessElector implements Candidate, SessionUser {
  readonly name: string;
  readonly identity: string;
  readonly leaseName: string;
  readonly lane: Lane;
  private readonly clock: Clock;
  private readonly o: ResolvedElectorOptions;
  private readonly events = new Emitter<ElectorEvents>();
  private readonly membership: Membership;
  private inner: { elector: BoundElector; off: Array<() => void> } | undefined;
  private started = false;
  private stopping: Promise<void> | undefined;

  constructor(o: ResolvedElectorOptions, options: CandidateOptions) {
    this.o = o;
    this.name = o.name;
    this.leaseName = o.name;
    this.clock = options.clock ?? systemClock;
    this.lane = options.lane ?? defaultLane(this.clock);
    this.membership = joinProcessSession(
      {
        store: options.store,
        clock: this.clock,
        random: options.random ?? Math.random,
        lane: this.lane,
        identity: o.identity,
        timing: {
          leaseMs: o.leaseMs,
          renewMs: o.renewMs,
          retryMs: o.retryMs,
          safetyMs: o.safetyMs,
          jitter: o.jitter,
          maxSkewMs: o.maxSkewMs,
          callTimeoutMs: o.callTimeoutMs,
          graceMs: o.leaseMs,
        },
        pollMs: o.pollMs,
      },
      this,
    );
    this.identity = this.membership.identity;
  }

  on<K extends keyof ElectorEvents>(type: K, listener: Listener<ElectorEvents[K]>): () => void {
    return this.events.on(type, listener);
  }

  get current(): ElectorState {
    const inner = this.inner?.elector.current;
    if (inner) return inner;
    return {
      phase: this.stopping ? "stopped" : this.started ? "follower" : "idle",
      isLeader: false,
      holder: null,
      term: 0,
      leaderUntil: undefined,
      lastRenewalSentAt: undefined,
    };
  }

  get signal(): AbortSignal | undefined {
    return this.inner?.elector.signal;
  }

  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.membership.start();
  }

  trackWork(work: Promise<unknown>): void {
    this.inner?.elector.trackWork(work);
  }

  /**
   * Stops as `Elector.stop` does. `release: false` leaves the lease bound to the session, to run
   * out with it, when this is the session's last running Elector; on a session others still renew
   * it would stay held by nobody for as long as they run, so it is released then (Membership.leave).
   */
  stop(options: { release?: boolean; graceMs?: number } = {}): Promise<void> {
    this.stopping ??= (async () => {
      this.membership.stopping();
      const release = options.release ?? true;
      await this.inner?.elector.stop({ ...options, release });
      await this.membership.leave(release);
    })();
    return this.stopping;
  }

  /** @internal The session to bind to now (`undefined`: none until a slot is claimed). */
  attach(session: LeaseSession | undefined): void {
    const old = this.inner;
    if (old) {
      this.inner = undefined;
      for (const off of old.off) off();
      // Its session is gone: nothing is held under it, so there is nothing to hand over.
      void old.elector.stop({ release: false });
    }
    if (!session || this.stopping) return;
    const elector = session.elector({
      name: this.o.name,
      metadata: this.o.metadata,
      graceMs: this.o.graceMs,
      handover: true,
    });
    const forward = <K extends keyof ElectorEvents>(type: K) =>
      elector.on(type, (event) => this.events.emit(type, event));
    const off = [
      forward("elected"),
      forward("deposed"),
      forward("leader"),
      forward("renewed"),
      forward("error"),
      // A store that cannot keep the contract does not get better by retrying (as for every Elector).
      elector.on("error", ({ error }) => {
        if (isStoreContractError(error)) void this.stop({ release: false });
      }),
    ];
    this.inner = { elector, off };
    elector.start();
  }

  /** @internal A failure of the shared session (or of finding it a slot), told to this Elector. */
  error(error: unknown, during: ElectorEvents["error"]["during"]): void {
    this.events.emit("error", { error, during });
    // As for the lease's own calls: a store that cannot keep the contract ends the campaign.
    if (isStoreContractError(error)) void this.stop({ release: false });
  }
}
