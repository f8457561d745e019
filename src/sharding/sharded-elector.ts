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
 *   write path (`CasWriter`, one per record). At most one call per record is in flight.
 *
 * A bucket's work (a tenure) starts when a record naming this member under its current session
 * is written by us or given to us, and ends, its signal aborting, when the session ends, when it is
 * handed off, when the bucket count changes, or on stop. A bucket given away (hand-off, release,
 * stop) is written only after its work has returned or `graceMs` has passed, so the next owner
 * never overlaps this one's shutdown. `stillLeader()` reads the clock: a member paused past its
 * session window sees `false` on waking, before any timer has run.
 *
 * Runtime-neutral: no Node-only API.
 */
import { type Clock, systemClock } from "../clock.js";
import { CasWriter, type WriteOutcome } from "../elector/cas.js";
import { Emitter, type Listener } from "../elector/events.js";
import { BucketLostError, LeaseCorruptError, LeaseStoreError, type RevokeReason } from "../errors.js";
import type { LeaseRecord, LeaseStore, Stored } from "../lease.js";
import {
  type BucketInfo,
  bucketName,
  bucketsPrefix,
  configName,
  configRecord,
  decodeBucket,
  decodeConfig,
  decodeMember,
  type GroupConfig,
  type MemberInfo,
  memberMetadata,
  membersPrefix,
} from "./layout.js";
import { MemberObservations } from "./membership.js";
import {
  claimRecord,
  fenceRecord,
  freeBucketRecord,
  releaseRecord,
  stampRecord,
  transferRecord,
} from "./next-records.js";
import { resolveShardedOptions } from "./options.js";
import { type ClaimKind, liveView, type Plan, planShards } from "./plan.js";
import { MemberSession, type SessionLossReason } from "./session.js";

/** The reason for aborting internal timers: a plain value, so no DOMException (and stack) is built each time. */
const DONE = "done";

export interface ShardedElectorOptions {
  /** Where the group lives; it must be able to list by prefix. */
  store: LeaseStore;
  /** The group name: its records are `<group>/config`, `<group>/members/<id>`, `<group>/buckets/<i>`. */
  group: string;
  /** The bucket count a new group starts with. An existing group's config record wins (see `reshard`). */
  buckets: number;
  /** This member's id, unique in the group (a-z 0-9 . _ -). Default: a random `m-xxxxxxxx`. */
  identity?: string;
  /** Session lease after each renewal. Default 15000. */
  leaseMs?: number;
  /** Session renewal interval; must be < leaseMs - safetyMs. Default leaseMs / 3. */
  renewMs?: number;
  /** Retry delay, and the poll interval while anything is moving. Default leaseMs / 7.5. */
  retryMs?: number;
  /** The session ends this much before it could expire elsewhere. Default leaseMs / 10. */
  safetyMs?: number;
  /** Retries wait retryMs * (1 + jitter * random). Default 0.2. */
  jitter?: number;
  /** Wall-clock skew bound, for treating a member record stale by its own stamps as expired. Default 1000. */
  maxSkewMs?: number;
  /** Longest a store call may take before it counts as ambiguous. Default renewMs. */
  callTimeoutMs?: number;
  /** How long a bucket's work may take to stop before the bucket is given away anyway. Default leaseMs. */
  graceMs?: number;
  /** How long the view must stay unchanged before buckets held by live members move. Default leaseMs. */
  settleMs?: number;
  /** Poll interval once everything is settled. Default renewMs. */
  pollMs?: number;
  /** The most buckets a member asks for at once. Default ceil(buckets / 8). */
  handoffBatch?: number;
  clock?: Clock;
  random?: () => number;
}

/**
 * How a tenure began: we took a free bucket (`fresh`), a bucket of a session that is over
 * (`takeover`), our own bucket again under a new session (`reestablish`); it was handed to us
 * (`handoff`); or a claim of ours whose outcome was unknown turned out to have landed (`recovered`).
 */
export type AssignedKind = ClaimKind | "handoff" | "recovered";

export interface AssignedEvent {
  bucket: number;
  /** The group's bucket count under which this tenure runs: `bucketOf(key, buckets) === bucket`. */
  buckets: number;
  /** The bucket's fencing token for this tenure. */
  term: number;
  record: LeaseRecord;
  /** Aborts the moment this tenure ends. */
  signal: AbortSignal;
  /** True while this tenure is held and the session's safe window is open, read from the clock now. */
  stillLeader: () => boolean;
  kind: AssignedKind;
}

export interface RevokedEvent {
  bucket: number;
  term: number;
  reason: RevokeReason;
}

export interface ShardedElectorEvents {
  assigned: AssignedEvent;
  revoked: RevokedEvent;
  session: { phase: "established" | "lost"; term: number; reason?: SessionLossReason };
  /** The live view changed (sorted member ids). */
  view: { members: string[] };
  /** We gave `bucket` to `to` at `term` (after its work stopped). */
  handoff: { bucket: number; to: string; term: number };
  /** We took `bucket` from `from`, whose session had expired and been fenced. */
  takeover: { bucket: number; from: string; term: number };
  /** We ended `member`'s expired session. */
  fenced: { member: string; term: number };
  /** After each plan: buckets seen with nobody working on them, and whether all is settled. */
  observed: { unowned: number; settled: boolean; held: number; buckets: number };
  error: {
    error: unknown;
    during: "poll" | "config" | "claim" | "handoff" | "release" | "stamp" | "fence" | "session";
  };
}

export interface ShardedElectorState {
  /** The session term while the session's safe window is open (read from the clock), else undefined. */
  session: number | undefined;
  /** Monotonic instant the session's window closes unless renewed (set while a session is held). */
  sessionUntil: number | undefined;
  /** The group's bucket count and config epoch, once read. */
  buckets: number | undefined;
  epoch: number | undefined;
  /** Buckets this member works on now, with each tenure's term. */
  held: Array<{ bucket: number; term: number }>;
  view: string[];
  wants: number[];
  unowned: number;
  settled: boolean;
}

interface Tenure {
  bucket: number;
  term: number;
  session: number;
  controller: AbortController;
  work: Set<Promise<unknown>>;
}

interface KnownBucket {
  info: BucketInfo;
  /** Monotonic time we learnt it (from our own write's answer, or when a listing was sent). */
  learnedAt: number;
  /** One of our writes produced it (recognised by its writeId). */
  ours: boolean;
}

/** While settled, the bucket records are listed every this many polls anyway (a safety net). */
const AUDIT_POLLS = 6;

export class ShardedElector {
  readonly group: string;
  readonly identity: string;
  readonly leaseMs: number;
  private readonly o: ReturnType<typeof resolveShardedOptions>;
  private readonly store: LeaseStore;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly session: MemberSession;
  private readonly observations = new MemberObservations();
  private readonly events = new Emitter<ShardedElectorEvents>();
  private readonly writers = new Map<string, CasWriter>();

  private config: GroupConfig | undefined;
  private members = new Map<string, MemberInfo>();
  private readonly buckets = new Map<number, KnownBucket>();
  private readonly tenures = new Map<number, Tenure>();
  private readonly lastEnded = new Map<number, number>();
  /** Per bucket: resolves once the last ended tenure's work returned or its grace passed. */
  private readonly quiet = new Map<number, Promise<void>>();
  /** One store call per record at a time, by record name. */
  private readonly busy = new Map<string, Promise<void>>();
  /** After a write failed without telling us the current record: no new write to it before then. */
  private readonly backoff = new Map<string, number>();
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
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.group = this.o.group;
    this.identity = this.o.identity;
    this.leaseMs = this.o.leaseMs;
    this.store.checkElectorSettings?.({ leaseMs: this.o.leaseMs, renewMs: this.o.renewMs, retryMs: this.o.retryMs });
    this.session = new MemberSession({
      store: this.store,
      name: this.o.memberName,
      identity: this.o.identity,
      leaseMs: this.o.leaseMs,
      renewMs: this.o.renewMs,
      retryMs: this.o.retryMs,
      safetyMs: this.o.safetyMs,
      maxSkewMs: this.o.maxSkewMs,
      callTimeoutMs: this.o.callTimeoutMs,
      jitter: this.o.jitter,
      clock: this.clock,
      random: this.random,
    });
    this.session.on("established", ({ term }) => {
      this.events.emit("session", { phase: "established", term });
      this.needBuckets = true;
      this.requestPoll();
    });
    this.session.on("lost", ({ term, reason }) => {
      const revoke: RevokeReason =
        reason === "expired" ? "session-expired" : reason === "fenced" ? "session-fenced" : "stopping";
      for (const bucket of [...this.tenures.keys()]) this.endTenure(bucket, revoke);
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
      held: [...this.tenures.values()]
        .map((t) => ({ bucket: t.bucket, term: t.term }))
        .sort((a, b) => a.bucket - b.bucket),
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
    const t = this.tenures.get(bucket);
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    if (t && t.term === term) {
      t.work.add(settled);
      void settled.then(() => t.work.delete(settled));
    } else {
      // Already ended: whoever gives the bucket away next still waits for it.
      const before = this.quiet.get(bucket) ?? Promise.resolve();
      this.quiet.set(
        bucket,
        Promise.all([before, this.withinGrace(settled)]).then(() => undefined),
      );
    }
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
      for (const bucket of [...this.tenures.keys()]) this.endTenure(bucket, "stopping");
      await Promise.all([...this.quiet.values()]);
      this.stopRequested = true;
      this.wake();
    }
    await this.loop;
    await Promise.all([...this.busy.values()]);
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
      await this.readConfig();
    } catch (error) {
      this.events.emit("error", { error, during: "config" });
      return false;
    }
    try {
      const listed = await this.listAll(membersPrefix(this.group));
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
        const records = await this.listAll(bucketsPrefix(this.group));
        this.pollsSinceBuckets = 0;
        for (const stored of records) this.learnBucket(stored, sentAt);
      } else this.pollsSinceBuckets++;
      return true;
    } catch (error) {
      this.needBuckets = true;
      this.events.emit("error", { error, during: "poll" });
      return false;
    }
  }

  private async readConfig(): Promise<void> {
    const writer = this.writerFor(configName(this.group));
    let stored = await writer.read({ timeoutMs: this.o.callTimeoutMs });
    if (!stored) {
      const fresh = configRecord(
        this.group,
        { buckets: this.o.buckets, epoch: 1, previous: 0 },
        this.o.leaseMs,
        this.clock.wallNow(),
      );
      const outcome = await writer.writeSettled(fresh, null, { timeoutMs: this.o.callTimeoutMs });
      stored = outcome.kind === "applied" ? outcome.stored : (outcome.current ?? null);
      if (!stored) throw new LeaseStoreError(`config record of group "${this.group}" vanished`, { ambiguous: false });
    }
    const config = decodeConfig(stored.record);
    if (!config) {
      // Never overwritten: an operator must look (or rewrite it with reshard()).
      throw new LeaseCorruptError(configName(this.group), [
        { path: "metadata", message: "expected buckets (1-4096), epoch (>= 1) and previous as whole numbers" },
      ]);
    }
    const before = this.config;
    if (before && config.epoch <= before.epoch) return;
    this.config = config;
    if (before) {
      // A new bucket count: all work stops; buckets are taken again under the new count.
      for (const bucket of [...this.tenures.keys()]) this.endTenure(bucket, "resharded");
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
      buckets: new Map([...this.buckets].map(([i, k]) => [i, k.info])),
      tenures: new Map([...this.tenures].map(([i, t]) => [i, t.term])),
      lastEnded: this.lastEnded,
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
    for (const b of plan.adopt) this.startTenure(b, config, this.buckets.get(b.index)?.ours ? "recovered" : "handoff");
    for (const m of plan.fences) this.fence(m);
    for (const r of plan.releases) this.release(r.current, config);
    for (const b of plan.stamps) this.stamp(b, config);
    for (const i of plan.creates) this.create(i, config);
    for (const c of plan.claims) this.claim(c.bucket, c.current, c.kind, config, session);
    for (const h of plan.handoffs) this.handoff(h.bucket, h.to, h.session, config);
    for (const t of plan.transfers) this.transfer(t.current, t.to, t.session, config);
    if (!this.stopping && JSON.stringify(plan.wants) !== JSON.stringify(this.wants)) {
      this.wants = plan.wants;
      this.session.setMetadata(memberMetadata(plan.wants));
    }
  }

  // ---- actions: each one compare-and-swap on a revision we read ----

  private claim(
    bucket: number,
    current: BucketInfo | undefined,
    kind: ClaimKind,
    config: GroupConfig,
    session: number,
  ): void {
    const name = bucketName(this.group, bucket);
    this.exclusive(name, async () => {
      if (this.stopping || this.session.validTerm() !== session) return;
      const wall = this.clock.wallNow();
      const owner = { holder: this.identity, session, epoch: config.epoch, leaseMs: this.o.leaseMs };
      const next = claimRecord(this.group, bucket, current, owner, wall);
      const outcome = await this.write(name, next, current?.stored ?? null);
      if (outcome.kind !== "applied") return;
      const info = this.learnBucket(outcome.stored, this.clock.now(), true);
      if (!info) return;
      if (kind === "takeover" && current?.holder != null && this.wasForced(current)) {
        this.events.emit("takeover", { bucket, from: current.holder, term: info.term });
      }
      this.startTenure(info, config, kind);
    }).catch((error: unknown) => this.events.emit("error", { error, during: "claim" }));
  }

  /** The previous holder's session did not end by its own release (it expired, and was fenced or restarted). */
  private wasForced(previous: BucketInfo): boolean {
    const m = this.members.get(previous.holder ?? "");
    return !(m && m.holder === null && m.term === previous.session && m.fencedBy === undefined);
  }

  private handoff(bucket: number, to: string, toSession: number, config: GroupConfig): void {
    const name = bucketName(this.group, bucket);
    if (this.busy.has(name) || this.clock.now() < (this.backoff.get(name) ?? 0)) return;
    this.endTenure(bucket, "handoff");
    const known = this.buckets.get(bucket)?.info;
    if (known) this.transfer(known, to, toSession, config);
  }

  private transfer(current: BucketInfo, to: string, toSession: number, config: GroupConfig): void {
    const name = bucketName(this.group, current.index);
    this.exclusive(name, async () => {
      await this.quiet.get(current.index);
      if (this.session.validTerm() === undefined) return; // our session ended: the bucket is free anyway
      const wall = this.clock.wallNow();
      const next = transferRecord(current, { holder: to, session: toSession, epoch: config.epoch }, wall);
      const outcome = await this.write(name, next, current.stored);
      if (outcome.kind === "applied") {
        this.learnBucket(outcome.stored, this.clock.now());
        this.events.emit("handoff", { bucket: current.index, to, term: next.term });
      }
    }).catch((error: unknown) => this.events.emit("error", { error, during: "handoff" }));
  }

  private release(current: BucketInfo, config: GroupConfig): void {
    const name = bucketName(this.group, current.index);
    this.exclusive(name, async () => {
      if (current.holder === this.identity) await this.quiet.get(current.index);
      if (this.session.validTerm() === undefined) return;
      const next = releaseRecord(current, config.epoch, this.clock.wallNow());
      const outcome = await this.write(name, next, current.stored);
      if (outcome.kind === "applied") this.learnBucket(outcome.stored, this.clock.now());
    }).catch((error: unknown) => this.events.emit("error", { error, during: "release" }));
  }

  /** Marks a record of an older epoch with ours, so no member still on the old count can take it. */
  private stamp(current: BucketInfo, config: GroupConfig): void {
    const name = bucketName(this.group, current.index);
    this.exclusive(name, async () => {
      const outcome = await this.write(name, stampRecord(current, config.epoch), current.stored);
      if (outcome.kind === "applied") this.learnBucket(outcome.stored, this.clock.now());
    }).catch((error: unknown) => this.events.emit("error", { error, during: "stamp" }));
  }

  private create(index: number, config: GroupConfig): void {
    const name = bucketName(this.group, index);
    this.exclusive(name, async () => {
      const next = freeBucketRecord(this.group, index, config.epoch, this.o.leaseMs, this.clock.wallNow());
      const outcome = await this.write(name, next, null);
      if (outcome.kind === "applied") this.learnBucket(outcome.stored, this.clock.now());
    }).catch((error: unknown) => this.events.emit("error", { error, during: "stamp" }));
  }

  /** Ends an expired member's session at exactly the revision we watched expire. */
  private fence(m: MemberInfo): void {
    const name = m.stored.record.name;
    this.exclusive(name, async () => {
      const next = fenceRecord(m, this.identity, this.clock.wallNow());
      const outcome = await this.writerFor(name).write(next, m.stored.revision, { timeoutMs: this.o.callTimeoutMs });
      if (outcome.kind === "unknown" || (outcome.kind === "lost" && !outcome.current)) {
        this.backoff.set(name, this.clock.now() + this.retryDelay());
      }
      const stored = outcome.kind === "applied" ? outcome.stored : outcome.kind === "lost" ? outcome.current : null;
      if (stored) {
        const info = decodeMember(this.group, stored);
        if (info) this.members.set(info.id, info);
      }
      if (outcome.kind === "applied") this.events.emit("fenced", { member: m.id, term: m.term });
      else if (outcome.kind === "unknown") this.events.emit("error", { error: outcome.error, during: "fence" });
    }).catch((error: unknown) => this.events.emit("error", { error, during: "fence" }));
  }

  /** A bucket write bounded by what is left of our session window; learns what a conflict shows. */
  private async write(name: string, next: LeaseRecord, expected: Stored | null): Promise<WriteOutcome> {
    const until = this.session.until ?? this.clock.now();
    const timeoutMs = Math.max(1, Math.min(this.o.callTimeoutMs, until - this.clock.now()));
    const outcome = await this.writerFor(name).write(next, expected?.revision ?? null, { timeoutMs });
    if (outcome.kind === "lost" && outcome.current) this.learnBucket(outcome.current, this.clock.now());
    if (outcome.kind === "unknown" || (outcome.kind === "lost" && !outcome.current)) {
      this.backoff.set(name, this.clock.now() + this.retryDelay());
    }
    if (outcome.kind === "unknown") {
      this.needBuckets = true;
      this.events.emit("error", {
        error: outcome.error,
        during: next.holder === null ? "release" : next.holder === this.identity ? "claim" : "handoff",
      });
    }
    return outcome;
  }

  // ---- tenures ----

  private startTenure(info: BucketInfo, config: GroupConfig, kind: AssignedKind): void {
    const session = this.session.validTerm();
    if (session === undefined || this.stopping || this.tenures.has(info.index)) return;
    if (info.holder !== this.identity || info.session !== session || info.held !== config.epoch) return;
    if (this.config?.epoch !== config.epoch || info.index >= config.buckets) return;
    if (info.term <= (this.lastEnded.get(info.index) ?? 0)) return;
    const tenure: Tenure = {
      bucket: info.index,
      term: info.term,
      session,
      controller: new AbortController(),
      work: new Set(),
    };
    this.tenures.set(info.index, tenure);
    this.events.emit("assigned", {
      bucket: info.index,
      buckets: config.buckets,
      term: info.term,
      record: info.stored.record,
      signal: tenure.controller.signal,
      stillLeader: () => this.stillLeader(tenure),
      kind,
    });
  }

  private stillLeader(t: Tenure): boolean {
    if (this.tenures.get(t.bucket) !== t || t.controller.signal.aborted) return false;
    return this.session.validTerm() === t.session && this.tenures.get(t.bucket) === t;
  }

  private endTenure(bucket: number, reason: RevokeReason): void {
    const t = this.tenures.get(bucket);
    if (!t) return;
    this.tenures.delete(bucket);
    this.lastEnded.set(bucket, Math.max(this.lastEnded.get(bucket) ?? 0, t.term));
    const before = this.quiet.get(bucket) ?? Promise.resolve();
    this.quiet.set(
      bucket,
      Promise.all([before, this.withinGrace(Promise.all([...t.work]))]).then(() => undefined),
    );
    t.controller.abort(new BucketLostError(bucket, t.term, reason));
    this.events.emit("revoked", { bucket, term: t.term, reason });
    this.replan = true;
    this.wake();
  }

  private withinGrace(work: Promise<unknown>): Promise<void> {
    const grace = new AbortController();
    return Promise.race([work.then(() => undefined), this.clock.sleep(this.o.graceMs, grace.signal)]).then(() =>
      grace.abort(DONE),
    );
  }

  // ---- what we know ----

  /** Takes a bucket record we read or wrote into account, unless we already know a newer one. */
  private learnBucket(stored: Stored, learnedAt: number, ours = false): BucketInfo | undefined {
    const recognised = this.writers.get(stored.record.name)?.recognise(stored) !== undefined;
    const info = decodeBucket(this.group, stored);
    if (!info) return undefined;
    const known = this.buckets.get(info.index);
    if (known?.info.stored.revision === info.stored.revision) return known.info;
    const newer =
      !known || info.term > known.info.term || (info.term === known.info.term && learnedAt >= known.learnedAt);
    if (newer) this.buckets.set(info.index, { info, learnedAt, ours: ours || recognised });
    return newer ? info : known?.info;
  }

  private writerFor(name: string): CasWriter {
    let writer = this.writers.get(name);
    if (!writer) {
      writer = new CasWriter({ store: this.store, name, clock: this.clock, callTimeoutMs: this.o.callTimeoutMs });
      this.writers.set(name, writer);
    }
    return writer;
  }

  /** Runs `fn` unless a call for `name` is already in flight; replans when it is done. */
  private exclusive(name: string, fn: () => Promise<void>): Promise<void> {
    if (this.busy.has(name) || this.clock.now() < (this.backoff.get(name) ?? 0)) return Promise.resolve();
    this.backoff.delete(name);
    const run = fn().finally(() => {
      this.busy.delete(name);
      this.replan = true;
      this.wake();
    });
    this.busy.set(
      name,
      run.catch(() => undefined),
    );
    return run;
  }

  /** Every record under `prefix`, within the call timeout. */
  private async listAll(prefix: string): Promise<Stored[]> {
    const list = this.store.list;
    if (!list) throw new LeaseStoreError("the store cannot list records", { ambiguous: false });
    const abort = new AbortController();
    const collect = (async () => {
      const out: Stored[] = [];
      for await (const stored of list.call(this.store, prefix)) out.push(stored);
      return out;
    })();
    collect.catch(() => undefined);
    const expired = this.clock.sleep(this.o.callTimeoutMs, abort.signal).then(() => {
      if (abort.signal.aborted) return undefined as never;
      throw new LeaseStoreError(`listing "${prefix}" timed out after ${this.o.callTimeoutMs} ms`, { ambiguous: false });
    });
    try {
      return await Promise.race([collect, expired]);
    } finally {
      abort.abort(DONE);
    }
  }

  // ---- scheduling ----

  /** Polls slowly once everything is settled and still; fast while anything moves. */
  private pollDelay(): number {
    const plan = this.lastPlan;
    const still =
      plan?.settled === true &&
      this.busy.size === 0 &&
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
    for (const retryAt of this.backoff.values()) if (retryAt > now) at = Math.min(at, retryAt);
    return at;
  }

  private retryDelay(): number {
    return this.o.retryMs * (1 + this.o.jitter * this.random());
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
