/**
 * `ShardedElector`: one member of a sharded group (docs/sharding.md). The group has N buckets; the
 * members share them out without a coordinator, each bucket fenced by its own term.
 *
 * Two loops, each writing its own records:
 * - the session (session.ts) keeps this member's record alive: one conditional write per renewal,
 *   whatever N. Every bucket held is valid exactly while the session is;
 * - the coordinator (here) polls the group (the member records and the config every poll, the
 *   bucket records while anything is moving or every few polls), runs the pure planner (plan.ts)
 *   and carries out its proposals, each a compare-and-swap on a revision it read, through the one
 *   write path (`CasWriter`, one per record, in group-records.ts). At most one call per record is
 *   in flight.
 *
 * A bucket's work (a tenure, tenures.ts) starts when a record naming this member under its current
 * session is written by us or given to us, and ends, its signal aborting, when the session ends,
 * when it is handed off, when the bucket count changes, or on stop. A bucket given away (hand-off,
 * release, stop) is written only after its work has returned or `graceMs` has passed, so the next
 * owner never overlaps this one's shutdown. `stillLeader()` reads the clock: a member paused past
 * its session window sees `false` on waking, before any timer has run.
 *
 * The public types (options, events, state) are in sharded-types.ts and re-exported here.
 *
 * Runtime-neutral: no Node-only API.
 */
import { type Clock, systemClock } from "../clock.js";
import { Emitter, type Listener } from "../elector/events.js";
import { SessionCore } from "../elector/session-core.js";
import type { RevokeReason } from "../errors.js";
import { GroupRecords } from "./group-records.js";
import {
  type BucketInfo,
  bucketName,
  bucketsPrefix,
  decodeMember,
  type GroupConfig,
  type MemberInfo,
  memberMetadata,
  membersPrefix,
} from "./layout.js";
import { MemberObservations } from "./membership.js";
import { claimRecord } from "./next-records.js";
import { resolveShardedOptions } from "./options.js";
import { type ClaimKind, liveView, type Plan, planShards } from "./plan.js";
import type {
  AssignedKind,
  ShardedElectorEvents,
  ShardedElectorOptions,
  ShardedElectorState,
} from "./sharded-types.js";
import { Tenures } from "./tenures.js";

export type {
  AssignedEvent,
  AssignedKind,
  RevokedEvent,
  ShardedElectorEvents,
  ShardedElectorOptions,
  ShardedElectorState,
} from "./sharded-types.js";

/** The reason for aborting internal timers: a plain value, so no DOMException (and stack) is built each time. */
const DONE = "done";

/** While settled, the bucket records are listed every this many polls anyway (a safety net). */
const AUDIT_POLLS = 6;

export class ShardedElector {
  readonly group: string;
  readonly identity: string;
  readonly leaseMs: number;
  private readonly o: ReturnType<typeof resolveShardedOptions>;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly session: SessionCore;
  private readonly observations = new MemberObservations();
  private readonly events = new Emitter<ShardedElectorEvents>();
  private readonly tenures: Tenures;
  private readonly records: GroupRecords;

  private config: GroupConfig | undefined;
  private members = new Map<string, MemberInfo>();
  private wants: number[] = [];
  private viewKey = "";
  private viewSince = 0;
  private lastPlan: Plan | undefined;
  private pollsSinceBuckets = Number.POSITIVE_INFINITY;
  private needBuckets = true;
  private replan = false;
  private stopping = false;
  private stopRequested = false;
  private loop: Promise<void> | undefined;
  private wakeLoop: (() => void) | undefined;

  constructor(options: ShardedElectorOptions) {
    this.o = resolveShardedOptions(options);
    const store = options.store;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.group = this.o.group;
    this.identity = this.o.identity;
    this.leaseMs = this.o.leaseMs;
    this.session = new SessionCore({
      store,
      name: this.o.memberName,
      identity: this.o.identity,
      leaseMs: this.o.leaseMs,
      renewMs: this.o.renewMs,
      retryMs: this.o.retryMs,
      // Waiting out a session of this id from another process (a restart) is rare and on the path
      // to rejoining: hear of its fence as soon as a retry would.
      pollMs: this.o.retryMs,
      safetyMs: this.o.safetyMs,
      maxSkewMs: this.o.maxSkewMs,
      callTimeoutMs: this.o.callTimeoutMs,
      jitter: this.o.jitter,
      clock: this.clock,
      random: this.random,
    });
    this.tenures = new Tenures({
      clock: this.clock,
      graceMs: this.o.graceMs,
      session: this.session,
      events: this.events,
      onEnded: () => this.planSoon(),
    });
    this.records = new GroupRecords({
      store,
      group: this.o.group,
      identity: this.o.identity,
      leaseMs: this.o.leaseMs,
      callTimeoutMs: this.o.callTimeoutMs,
      clock: this.clock,
      session: this.session,
      events: this.events,
      tenures: this.tenures,
      retryDelay: () => this.retryDelay(),
      onCallDone: () => this.planSoon(),
      onUnknownOutcome: () => {
        this.needBuckets = true;
      },
    });
    this.session.on("established", ({ term }) => {
      this.events.emit("session", { phase: "established", term });
      this.needBuckets = true;
      this.requestPoll();
    });
    this.session.on("lost", ({ term, reason }) => {
      const revoke: RevokeReason =
        reason === "expired" ? "session-expired" : reason === "fenced" ? "session-fenced" : "stopping";
      this.tenures.endAll(revoke);
      this.events.emit("session", { phase: "lost", term, reason });
      this.needBuckets = true;
      this.requestPoll();
    });
    this.session.on("error", ({ error }) => this.events.emit("error", { error, during: "session" }));
  }

  on<K extends keyof ShardedElectorEvents>(type: K, listener: Listener<ShardedElectorEvents[K]>): () => void {
    return this.events.on(type, listener);
  }

  /** A snapshot with no side effect; `session` is checked against the clock at the moment of asking. */
  get current(): ShardedElectorState {
    const peek = this.session.peek();
    return {
      session: peek && this.clock.now() < peek.until ? peek.term : undefined,
      sessionUntil: peek?.until,
      buckets: this.config?.buckets,
      epoch: this.config?.epoch,
      held: this.tenures.held(),
      view: this.lastPlan?.view ?? [],
      wants: [...this.wants],
      unowned: this.lastPlan?.unowned ?? this.config?.buckets ?? this.o.buckets,
      settled: this.lastPlan?.settled ?? false,
    };
  }

  start(): void {
    if (this.loop) return;
    this.session.start();
    this.loop = this.run();
  }

  /**
   * Registers a tenure's work: a hand-off, a release or stop waits for it (up to `graceMs`) before
   * the bucket is written away, so the next owner never overlaps it.
   */
  trackWork(bucket: number, term: number, work: Promise<unknown>): void {
    this.tenures.track(bucket, term, work);
  }

  /**
   * Leaves the group. Every bucket's work is signalled and awaited (up to graceMs); then, with
   * `handOff` (the default), the session is released, which frees every bucket this member held in
   * one write, for the members the assignment names to take at once. `handOff: false` stops
   * without writing (the buckets are taken once the session has expired, as after a crash).
   */
  async stop(options: { handOff?: boolean } = {}): Promise<void> {
    if (!this.loop) return;
    if (!this.stopping) {
      this.stopping = true;
      this.tenures.endAll("stopping");
      await this.tenures.allQuiet();
      this.stopRequested = true;
      this.wake();
    }
    await this.loop;
    await this.records.settled();
    await this.session.stop({ release: options.handOff ?? true });
  }

  // ---- the coordinator loop ----

  private async run(): Promise<void> {
    let nextPollAt = this.clock.now();
    let polled = false;
    let planAt = Number.POSITIVE_INFINITY;
    while (!this.stopRequested) {
      if (this.clock.now() >= nextPollAt) {
        polled = await this.poll();
        if (this.stopRequested) break;
        this.replan = true;
        nextPollAt = this.clock.now() + (polled ? this.pollDelay() : this.retryDelay());
      }
      // Plan again after anything new (a poll, a finished write, a tenure ended, the session) or
      // at the next instant time alone changes the answer (an expiry, the view settling, a back-off).
      if (this.replan || this.clock.now() >= planAt) {
        this.replan = false;
        planAt = Number.POSITIVE_INFINITY;
        if (polled) {
          this.planAndAct();
          planAt = this.nextDeadline();
        }
      }
      const wakeAt = Math.min(nextPollAt, planAt);
      await this.wait(wakeAt - this.clock.now());
      if (this.pollRequested) {
        this.pollRequested = false;
        nextPollAt = Math.min(nextPollAt, this.clock.now());
      }
    }
  }

  private pollRequested = false;

  private requestPoll(): void {
    this.pollRequested = true;
    this.wake();
  }

  /** Reads the config, the member records, and the bucket records when they may matter. */
  private async poll(): Promise<boolean> {
    try {
      this.takeConfig(await this.records.readConfig(this.o.buckets));
    } catch (error) {
      this.events.emit("error", { error, during: "config" });
      return false;
    }
    try {
      const listed = await this.records.listAll(membersPrefix(this.group));
      const members = new Map<string, MemberInfo>();
      for (const stored of listed) {
        const m = decodeMember(this.group, stored);
        if (m) members.set(m.id, m);
      }
      this.members = members;
      const changed = this.observations.update(members.values(), this.clock.now());
      const settled = this.lastPlan?.settled ?? false;
      if (changed || this.needBuckets || !settled || this.pollsSinceBuckets >= AUDIT_POLLS) {
        this.needBuckets = false;
        const sentAt = this.clock.now();
        const records = await this.records.listAll(bucketsPrefix(this.group));
        this.pollsSinceBuckets = 0;
        for (const stored of records) this.records.learnBucket(stored, sentAt);
      } else this.pollsSinceBuckets++;
      return true;
    } catch (error) {
      this.needBuckets = true;
      this.events.emit("error", { error, during: "poll" });
      return false;
    }
  }

  /** Takes the config just read into account, unless we already know a newer epoch. */
  private takeConfig(config: GroupConfig): void {
    const before = this.config;
    if (before && config.epoch <= before.epoch) return;
    this.config = config;
    if (before) {
      // A new bucket count: all work stops; buckets are taken again under the new count.
      this.tenures.endAll("resharded");
      this.wants = [];
      this.session.setMetadata(memberMetadata([]));
      this.needBuckets = true;
    }
  }

  private planAndAct(): void {
    const config = this.config;
    if (!config) return;
    const now = this.clock.now();
    const session = this.session.validTerm();
    const wall = this.clock.wallNow();
    const expired = new Set<string>();
    for (const m of this.members.values()) {
      if (m.id === this.identity) continue;
      const at = this.observations.expiresAt(m, wall, this.o.maxSkewMs);
      if (at !== undefined && now >= at) expired.add(m.id);
    }
    const base = {
      me: this.identity,
      session,
      members: this.members,
      expired,
      stopping: this.stopping,
    };
    const view = liveView(base);
    const key = view.join(",");
    if (key !== this.viewKey) {
      this.viewKey = key;
      this.viewSince = now;
      this.events.emit("view", { members: view });
    }
    const plan = planShards({
      ...base,
      config,
      buckets: new Map([...this.records.buckets].map(([i, k]) => [i, k.info])),
      tenures: this.tenures.terms(),
      lastEnded: this.tenures.lastEnded,
      stable: now - this.viewSince >= this.o.settleMs,
      batch: this.o.handoffBatch ?? Math.max(1, Math.ceil(config.buckets / 8)),
      wants: this.wants,
    });
    this.lastPlan = plan;
    if (plan.staleConfig) {
      this.requestPoll();
      return;
    }
    if (session !== undefined) this.act(plan, config, session);
    this.events.emit("observed", {
      unowned: plan.unowned,
      settled: plan.settled,
      held: this.tenures.size,
      buckets: config.buckets,
    });
  }

  private act(plan: Plan, config: GroupConfig, session: number): void {
    const known = this.records.buckets;
    for (const b of plan.adopt) this.startTenure(b, config, known.get(b.index)?.ours ? "recovered" : "handoff");
    for (const m of plan.fences) this.fence(m);
    for (const r of plan.releases) this.records.release(r.current, config);
    for (const b of plan.stamps) this.records.stamp(b, config);
    for (const i of plan.creates) this.records.create(i, config);
    for (const c of plan.claims) this.claim(c.bucket, c.current, c.kind, config, session);
    for (const h of plan.handoffs) this.handoff(h.bucket, h.to, h.session, config);
    for (const t of plan.transfers) this.records.transfer(t.current, t.to, t.session, config);
    if (!this.stopping && JSON.stringify(plan.wants) !== JSON.stringify(this.wants)) {
      this.wants = plan.wants;
      this.session.setMetadata(memberMetadata(plan.wants));
    }
  }

  // ---- actions: each one compare-and-swap on a revision we read (the rest are in group-records.ts) ----

  private claim(
    bucket: number,
    current: BucketInfo | undefined,
    kind: ClaimKind,
    config: GroupConfig,
    session: number,
  ): void {
    const name = bucketName(this.group, bucket);
    this.records
      .exclusive(name, async () => {
        if (this.stopping || this.session.validTerm() !== session) return;
        const wall = this.clock.wallNow();
        const owner = { holder: this.identity, session, epoch: config.epoch, leaseMs: this.o.leaseMs };
        const next = claimRecord(this.group, bucket, current, owner, wall);
        const outcome = await this.records.write(name, next, current?.stored ?? null);
        if (outcome.kind !== "applied") return;
        const info = this.records.learnBucket(outcome.stored, this.clock.now(), true);
        if (!info) return;
        if (kind === "takeover" && current?.holder != null && this.wasForced(current)) {
          this.events.emit("takeover", { bucket, from: current.holder, term: info.term });
        }
        this.startTenure(info, config, kind);
      })
      .catch((error: unknown) => this.events.emit("error", { error, during: "claim" }));
  }

  /** The previous holder's session did not end by its own release (it expired, and was fenced or restarted). */
  private wasForced(previous: BucketInfo): boolean {
    const m = this.members.get(previous.holder ?? "");
    return !(m && m.holder === null && m.term === previous.session && m.fencedBy === undefined);
  }

  private handoff(bucket: number, to: string, toSession: number, config: GroupConfig): void {
    const name = bucketName(this.group, bucket);
    if (this.records.blocked(name)) return;
    this.tenures.end(bucket, "handoff");
    const known = this.records.buckets.get(bucket)?.info;
    if (known) this.records.transfer(known, to, toSession, config);
  }

  /** Ends an expired member's session; what the answer shows of its record joins our view. */
  private fence(m: MemberInfo): void {
    this.records.fence(m, (info) => this.members.set(info.id, info));
  }

  // ---- tenures ----

  /** Starts a tenure on a record naming us under the current session, config and bucket count. */
  private startTenure(info: BucketInfo, config: GroupConfig, kind: AssignedKind): void {
    const session = this.session.validTerm();
    if (session === undefined || this.stopping || this.tenures.has(info.index)) return;
    if (info.holder !== this.identity || info.session !== session || info.held !== config.epoch) return;
    if (this.config?.epoch !== config.epoch || info.index >= config.buckets) return;
    if (info.term <= (this.tenures.lastEnded.get(info.index) ?? 0)) return;
    this.tenures.start(info, config.buckets, session, kind);
  }

  // ---- scheduling ----

  /** Polls slowly once everything is settled and still; fast while anything moves. */
  private pollDelay(): number {
    const plan = this.lastPlan;
    const still =
      plan?.settled === true &&
      this.records.idle &&
      this.clock.now() - this.viewSince >= this.o.settleMs &&
      this.session.validTerm() !== undefined;
    return still ? this.o.pollMs : this.retryDelay();
  }

  /** The next instant something changes without a store call: a member's expiry, or the view settling. */
  private nextDeadline(): number {
    let at = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    const wall = this.clock.wallNow();
    for (const m of this.members.values()) {
      if (m.id === this.identity) continue;
      const e = this.observations.expiresAt(m, wall, this.o.maxSkewMs);
      if (e !== undefined && e > now) at = Math.min(at, e);
    }
    const settlesAt = this.viewSince + this.o.settleMs;
    if (settlesAt > now) at = Math.min(at, settlesAt);
    return Math.min(at, this.records.nextRetryAfter(now));
  }

  private retryDelay(): number {
    return this.o.retryMs * (1 + this.o.jitter * this.random());
  }

  /** Something changed (a call finished, a tenure ended): plan again at once. */
  private planSoon(): void {
    this.replan = true;
    this.wake();
  }

  private async wait(ms: number): Promise<void> {
    if (this.stopRequested || this.replan || ms <= 0) return;
    const cut = new AbortController();
    this.wakeLoop = () => cut.abort(DONE);
    await this.clock.sleep(ms, cut.signal);
    this.wakeLoop = undefined;
    cut.abort(DONE);
  }

  private wake(): void {
    this.wakeLoop?.();
  }
}
