/**
 * The shapes every candidate for one lease shares: its options, its events and its snapshot. An
 * `Elector` keeps its lease either bound to its process's session (the default, src/bound/) or by
 * renewing the lease's own record (./renewing-elector.ts); both engines show users this surface,
 * so `runLeader`, metrics and benches take either.
 *
 * Types only.
 */
import type { Clock } from "../clock.js";
import type { LossReason } from "../errors.js";
import type { LeaseRecord, LeaseStore } from "../lease.js";
import type { Listener } from "./events.js";
import type { Lane } from "./lane.js";

/** What every candidate for one lease takes, whichever way it keeps its lease (docs/design.md §4). */
export interface CandidateOptions {
  /** Where the lease lives. */
  store: LeaseStore;
  /** The lease name (docs/design.md §1 pattern). */
  name: string;
  /**
   * The holder its records name; unique per process. Default: bound to the process session, the
   * process's id (`process-<8 hex>`, with `-2` for a second candidate of one lease); renewing its
   * own record (`session: false`), a random id per candidate.
   */
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

/** One candidate's surface: what `Elector` delegates to the engine that keeps its lease. */
export interface Candidate {
  readonly name: string;
  readonly identity: string;
  on<K extends keyof ElectorEvents>(type: K, listener: Listener<ElectorEvents[K]>): () => void;
  readonly current: ElectorState;
  readonly signal: AbortSignal | undefined;
  start(): void;
  trackWork(work: Promise<unknown>): void;
  stop(options?: { release?: boolean; graceMs?: number }): Promise<void>;
}
