/**
 * A process session (docs/design.md §4 "Bound leases"): one record, renewed by one conditional
 * write per renewal whatever the number of leases bound to it, as etcd's session keeps many keys
 * alive with one keep-alive. It is the session core (src/elector/session-core.ts) on a
 * record of its own: valid until `sentAt + leaseMs - safetyMs` on the monotonic clock, a
 * watchdog, ambiguous writes resolved by `writeId`, re-established at term + 1, never revived.
 *
 * ```ts
 * const session = openSession({ store, name: "workers/_sessions/worker-1" });
 * const elector = session.elector({ name: "jobs/billing" });   // Elector's interface
 * await runLeader(elector, async ({ term, signal }) => { ... });
 * await session.close();                                         // releases its leases, then itself
 * ```
 *
 * Runtime-neutral.
 */
import { z } from "zod";
import { type Clock, systemClock } from "../clock.js";
import type { Lane } from "../elector/lane.js";
import { defaultLane } from "../elector/load-lane.js";
import { followerFields, type ResolvedTiming, resolveTiming, storeField, timingFields } from "../elector/options.js";
import { SessionCore, type SessionLossReason } from "../elector/session-core.js";
import type { CandidateOptions } from "../elector/types.js";
import { type FieldIssue, LeaseValidationError, type LossReason } from "../errors.js";
import {
  holderSchema,
  type LeaseRecord,
  type LeaseStore,
  metadataSchema,
  nameSchema,
  newWriteId,
  SESSION_NAME_PATTERN,
  sessionNameSchema,
  zodIssues,
} from "../lease.js";
import { BoundElector, type SessionChange, type SessionPort } from "./bound-elector.js";
import { SessionObserver } from "./observer.js";
import type { SessionRef } from "./refs.js";

/**
 * The session's options: the store and an Elector's timing (the same fields, defaults and rules:
 * `leaseMs` is how long the session, and every lease bound to it, lasts after each renewal).
 */
export interface SessionOptions
  extends Pick<
    CandidateOptions,
    | "store"
    | "identity"
    | "leaseMs"
    | "renewMs"
    | "retryMs"
    | "safetyMs"
    | "jitter"
    | "maxSkewMs"
    | "callTimeoutMs"
    | "clock"
    | "random"
    | "pollMs"
    | "lane"
  > {
  /**
   * The session record's name, `[<scope>/]_sessions/<id>` (a protocol record: no lease name can
   * be one). Default `_sessions/<identity>`; give a stable one per process slot, so a restarted
   * process reuses its record instead of adding one, and a scope inside your token's prefixes when
   * the store is the HTTP API (`adapters/_sessions/worker-1`).
   */
  name?: string;
}

export interface BoundElectorOptions {
  /** The lease name; not the session's own. */
  name: string;
  /** Caller metadata written with the lease when this candidate acquires it (not on a hand-over). */
  metadata?: Record<string, string>;
  /** On stop, how long leader work may run after its signal aborted. Default the session's leaseMs. */
  graceMs?: number;
  /**
   * Register as the lease's successor while following, and accept it when handed over; a graceful
   * stop hands the lease to a registered successor. Default true.
   */
  handover?: boolean;
}

const sessionSchema = z.strictObject(
  {
    store: storeField(["get", "put"], "expected a LeaseStore (an object with get and put)"),
    name: sessionNameSchema.optional(),
    identity: holderSchema.optional(),
    ...timingFields,
    ...followerFields,
  },
  { error: "expected session options: { store, name?, identity?, leaseMs?, ... }" },
);

const electorSchema = z.strictObject(
  {
    name: nameSchema,
    metadata: metadataSchema.default({}),
    graceMs: timingFields.renewMs.unwrap().nonnegative().optional(),
    handover: z.boolean({ error: "expected true or false" }).default(true),
  },
  { error: "expected bound elector options: { name, metadata?, graceMs?, handover? }" },
);

const LOSS: Record<SessionLossReason, LossReason> = {
  expired: "expired",
  fenced: "conflict",
  released: "released",
  stopped: "stopped",
};

/** Opens a session and starts establishing it (term + 1 by compare-and-swap). */
export function openSession(options: SessionOptions): LeaseSession {
  return new LeaseSession(options);
}

export class LeaseSession implements SessionPort {
  private counting = true;
  private uncounted = false;
  readonly name: string;
  readonly identity: string;
  readonly leaseMs: number;
  readonly renewMs: number;
  readonly retryMs: number;
  readonly safetyMs: number;
  /** @internal What bound electors need (SessionPort). */
  readonly store: LeaseStore;
  readonly clock: Clock;
  readonly random: () => number;
  readonly timing: ResolvedTiming;
  /** How often its followers read a lease they wait for (an Elector's `pollMs`). */
  readonly pollMs: number;
  /** What admits its followers' polls and acquisitions (an Elector's `lane`). */
  readonly lane: Lane;
  readonly observer: SessionObserver;
  private readonly member: SessionCore;
  private readonly electors = new Map<string, BoundElector>();
  private readonly claims = new Map<string, number>();
  private readonly listeners = new Set<(change: SessionChange) => void>();
  private closing: Promise<void> | undefined;

  constructor(options: SessionOptions) {
    const parsed = sessionSchema.safeParse(options);
    if (!parsed.success) throw new LeaseValidationError("session options", zodIssues(parsed.error));
    const o = parsed.data;
    const issues: FieldIssue[] = [];
    this.timing = resolveTiming(o, issues, "the session");
    const identity = o.identity ?? `session-${newWriteId().slice(0, 8)}`;
    const name = o.name ?? `_sessions/${identity}`;
    if (o.name === undefined && !SESSION_NAME_PATTERN.test(name)) {
      issues.push({
        path: "name",
        message: `expected a session record name: the identity ${JSON.stringify(identity)} does not make one (_sessions/<identity>), give name`,
      });
    }
    if (issues.length > 0) throw new LeaseValidationError("session options", issues);
    this.store = options.store;
    this.name = name;
    this.identity = identity;
    this.leaseMs = this.timing.leaseMs;
    this.renewMs = this.timing.renewMs;
    this.retryMs = this.timing.retryMs;
    this.safetyMs = this.timing.safetyMs;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.pollMs = o.pollMs;
    this.lane = options.lane ?? defaultLane(this.clock);
    this.observer = new SessionObserver({
      store: this.store,
      clock: this.clock,
      maxSkewMs: this.timing.maxSkewMs,
      callTimeoutMs: this.timing.callTimeoutMs,
      // A live session is looked at about as often as a lease is polled (the lock clients' pace,
      // `pollMs`): its looks are its followers' polls. They are timed to its owner's renewals,
      // taken to be as frequent as ours.
      pollMs: this.pollMs,
      renewShare: this.timing.renewMs / this.timing.leaseMs,
      lane: this.lane,
      identity,
    });
    this.member = new SessionCore({
      store: this.store,
      name,
      identity,
      ...this.timing,
      clock: this.clock,
      random: this.random,
      countsReleases: true,
    });
    this.member.on("established", ({ term }) => this.tell({ kind: "established", term }));
    this.member.on("renewed", ({ term }) => this.tell({ kind: "renewed", term }));
    this.member.on("lost", ({ term, reason }) => this.tell({ kind: "lost", term, reason: LOSS[reason] }));
    this.member.start();
  }

  /** Subscribes to the session's own events (established, renewed, lost, error). */
  readonly on: SessionCore["on"] = (type, listener) => this.member.on(type, listener);

  /** The session term while it is valid at this instant (the monotonic clock), else `undefined`. */
  validTerm(): number | undefined {
    return this.member.validTerm();
  }

  /** A lease bound to this session was released or handed over: its count goes up, written at once. */
  noteRelease(): void {
    if (this.counting) this.member.noteRelease();
    else this.uncounted = true;
  }

  /**
   * Whether releases are counted now. Not while the session is about to close (its release tells
   * followers as much, and a count would cost its last Electors' stops one more write); counting
   * again after a release went uncounted counts it then.
   */
  countReleases(on: boolean): void {
    this.counting = on;
    if (on && this.uncounted) {
      this.uncounted = false;
      this.member.noteRelease();
    }
  }

  /** The held session term and when its window closes, whether or not still open; no side effect. */
  peek(): { term: number; until: number } | undefined {
    return this.member.peek();
  }

  /** The session's tenure while valid: what its leases' records name. */
  get ref(): SessionRef | undefined {
    const term = this.validTerm();
    return term === undefined ? undefined : { name: this.name, term };
  }

  /** The session record as last written, while held. */
  get record(): LeaseRecord | undefined {
    return this.member.record;
  }

  /** A candidate for lease `name` bound to this session (one per lease name at a time). */
  elector(options: BoundElectorOptions): BoundElector {
    const parsed = electorSchema.safeParse(options);
    if (!parsed.success) throw new LeaseValidationError("bound elector options", zodIssues(parsed.error));
    const o = parsed.data;
    if (this.closing)
      throw new LeaseValidationError("bound elector options", [{ path: "", message: "the session is closed" }]);
    if (o.name === this.name) {
      throw new LeaseValidationError("bound elector options", [
        { path: "name", message: `expected a lease other than the session record "${this.name}"` },
      ]);
    }
    if (this.electors.has(o.name)) {
      throw new LeaseValidationError("bound elector options", [
        { path: "name", message: `expected one elector per lease in a session: "${o.name}" has one (stop it first)` },
      ]);
    }
    const elector = new BoundElector(this, { ...o, graceMs: o.graceMs ?? this.leaseMs });
    this.electors.set(o.name, elector);
    return elector;
  }

  /**
   * Stops every elector of this session (each hands over or releases its lease unless `release`
   * is false), then stops renewing; with `release` (default) the session record is released, so
   * any lease still bound to it is free at once.
   */
  close(options: { release?: boolean } = {}): Promise<void> {
    this.closing ??= (async () => {
      const release = options.release ?? true;
      await Promise.all([...this.electors.values()].map((e) => e.stop({ release })));
      await this.member.stop({ release });
    })();
    return this.closing;
  }

  /** @internal */
  onSession(listener: (change: SessionChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** @internal */
  claimed(name: string): number {
    return this.claims.get(name) ?? 0;
  }

  /** @internal */
  claim(name: string, term: number): void {
    if (term > this.claimed(name)) this.claims.set(name, term);
  }

  /** @internal */
  unclaim(name: string, term: number, before: number): void {
    if (this.claimed(name) === term) this.claims.set(name, before);
  }

  /** @internal */
  detach(elector: object): void {
    for (const [name, e] of this.electors) if (e === elector) this.electors.delete(name);
  }

  private tell(change: SessionChange): void {
    for (const listener of this.listeners) listener(change);
  }
}
