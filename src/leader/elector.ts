/**
 * The elector (docs/design.md §3, §4): one candidate for one lease, in one of two engines that
 * show the same surface (a signal per term, `stillLeader()`, the `elected`, `deposed` and `leader`
 * events, a graceful stop that waits for the leader's work):
 *
 * - **bound to the process session** (the default, src/bound/process-elector.ts): every Elector
 *   of the process with the same store, scope and timing rides on one session record, renewed by
 *   one write per renewal interval whatever the number of leases; a graceful stop hands the lease
 *   to a waiting successor in one write.
 * - **renewing its own record** (`session: false`, ./elector/renewing-elector.ts): one write per
 *   lease per renewal, the lock clients' way; for a lease whose candidates include programs that
 *   only renew their own record (leasehold before sessions), since such a candidate never takes
 *   over a lease bound to a session.
 *
 * Runtime-neutral: no Node-only API.
 */
import { ProcessElector } from "../bound/process-elector.js";
import type { Listener } from "../elector/events.js";
import type { Lane } from "../elector/lane.js";
import { resolveElectorOptions } from "../elector/options.js";
import { RenewingElector } from "../elector/renewing-elector.js";
import type { Candidate, CandidateOptions, ElectorEvents, ElectorState } from "../elector/types.js";

export type {
  DeposedEvent,
  ElectedEvent,
  ElectorEvents,
  ElectorPhase,
  ElectorState,
  LeaderEvent,
} from "../elector/types.js";
export type { LossReason } from "../errors.js";

export interface ElectorOptions extends CandidateOptions {
  /**
   * `true` (default): the lease is bound to this process's session (`<scope>/_sessions/slot-N`,
   * the scope being the lease name up to its last `/`), which every Elector of the process with
   * the same store, scope, identity and timing shares: one store write per renewal interval for
   * all of them, and a graceful stop hands the lease to a waiting successor. `false`: the lease
   * renews its own record (one write per lease per renewal), for candidates that must share a
   * lease with programs that do only that.
   */
  session?: boolean;
}

export class Elector {
  readonly name: string;
  /** The holder its records name: by default this process's id (numbered for a second candidate of one lease). */
  readonly identity: string;
  readonly leaseMs: number;
  readonly renewMs: number;
  readonly retryMs: number;
  readonly pollMs: number;
  readonly safetyMs: number;
  /** Bound to the process session (`true`) or renewing its own record. */
  readonly session: boolean;
  /** Admits follower-side calls; renewals never ask it (renewals first). */
  readonly lane: Lane;
  private readonly engine: Candidate & { readonly lane: Lane };

  constructor(options: ElectorOptions) {
    const o = resolveElectorOptions(options);
    this.engine = o.session ? new ProcessElector(o, options) : new RenewingElector(o, options);
    this.name = o.name;
    this.identity = this.engine.identity;
    this.leaseMs = o.leaseMs;
    this.renewMs = o.renewMs;
    this.retryMs = o.retryMs;
    this.pollMs = o.pollMs;
    this.safetyMs = o.safetyMs;
    this.session = o.session;
    this.lane = this.engine.lane;
  }

  /** Subscribes to an event; returns the unsubscribe function. */
  on<K extends keyof ElectorEvents>(type: K, listener: Listener<ElectorEvents[K]>): () => void {
    return this.engine.on(type, listener);
  }

  /** A snapshot; `isLeader` is computed from the clock at the moment of asking. */
  get current(): ElectorState {
    return this.engine.current;
  }

  /** The signal of the current term, when leader. */
  get signal(): AbortSignal | undefined {
    return this.engine.signal;
  }

  /** Starts campaigning. Idempotent. */
  start(): void {
    this.engine.start();
  }

  /**
   * Registers leader work: a graceful stop waits for it (up to `graceMs`) before releasing, so the
   * next leader never overlaps this one's shutdown.
   */
  trackWork(work: Promise<unknown>): void {
    this.engine.trackWork(work);
  }

  /**
   * Stops campaigning. A leader first aborts its term's signal, waits while tracked work finishes
   * (at most `graceMs`), then hands the lease to a waiting successor or releases it (`release:
   * true`, the default) so a follower can take over at once; `release: false` lets the lease run
   * out instead.
   */
  stop(options: { release?: boolean; graceMs?: number } = {}): Promise<void> {
    return this.engine.stop(options);
  }
}
