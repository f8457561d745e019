/**
 * Sharded groups over HTTP (docs/sharding.md, "Over HTTP"; docs/design.md §5, §8): the server is
 * the coordinator loop of a remote member. The API is stateless, so every call starts from the
 * records: it reads the group's config, lists its members and buckets, renews the caller's session
 * by compare-and-swap, runs the library's own planner (`planShards`) for the caller, and carries
 * out what the planner proposes with the library's own record builders (src/sharding/next-records.ts).
 * Every write goes through the write path and is checked against the term rules
 * (`LeaseService.writeChecked`), whatever the token allows.
 *
 * What differs from the library, and why it stays safe:
 * - Expiry is judged by the record's own stamps, `renewedAt + leaseMs + maxSkewMs` against this
 *   server's wall clock (docs/design.md §3, the stateless rule), and passed to the planner as its
 *   `expired` input. An expired member is fenced (its record released at the revision read) before
 *   any of its buckets is taken, as the library does.
 * - The server cannot know what a remote member is working on, so it treats every bucket the
 *   member holds under its current session as running: it never writes one away on its own.
 *   Moving one needs the member's confirmation that its work has stopped (`confirmHandoff`), or
 *   the end of its session (leave, or expiry and a fence).
 * - "The view has been stable for `settleMs`" is judged from the member records' stamps (when each
 *   live member's run of sessions began, its `since`; when each session ended or expired), with the
 *   caller's `leaseMs` as `settleMs`.
 *   Stability only gates hand-off requests, which need the owner's cooperation: a wrong judgement
 *   can move a bucket early or late, never give it to two members.
 * - The member's session window is the member's own business: it stops all work at its own
 *   monotonic `sentAt + leaseMs - safetyMs`; nothing the server answers extends that. What the
 *   server makes sure of is that a member that had to stop never gets the same terms back: no
 *   renewal for a heartbeat arriving after `renewedAt + leaseMs`, and a start on top of the
 *   member's own live session when it names that session as ended (`sessionStep`).
 *
 * Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import type {
  HandoffConfirmation,
  HandoffResultView,
  HeartbeatRequest,
  HeartbeatView,
  LeaveRequest,
  MemberLeftView,
} from "../http/schemas.js";
import { type LeaseRecord, newWriteId, releasedRecord, type Stored } from "../lease.js";
import { MAX_BUCKETS } from "../sharding/bucket-of.js";
import {
  type BucketInfo,
  bucketsPrefix,
  configName,
  configRecord,
  decodeBucket,
  decodeConfig,
  decodeMember,
  type GroupConfig,
  legacyConfigName,
  legacyGroupRefusal,
  type MemberInfo,
  memberMetadata,
  memberName,
  membersPrefix,
} from "../sharding/layout.js";
import {
  claimRecord,
  fenceRecord,
  freeBucketRecord,
  releaseRecord,
  stampRecord,
  transferRecord,
} from "../sharding/next-records.js";
import { type Plan, planShards } from "../sharding/plan.js";
import { pastExpiry } from "../tenure.js";
import { isGroupConfig } from "./group-records.js";
import { digestOf, instanceDigest } from "./instance.js";
import type { Caller, LeaseService } from "./lease-service.js";
import { ProblemError } from "./problems.js";

/** A lost race is decided again on the fresh records this many times before the caller is told to retry. */
const ATTEMPTS = 4;
/** Writes of one call run this many at a time. */
const PARALLEL_WRITES = 8;
/**
 * The most members one group has through the API (as many as the largest bucket count): a
 * heartbeat lists them all, so their number is bounded like everything a request reads.
 */
export const MAX_MEMBERS = MAX_BUCKETS;

interface Group {
  config: GroupConfig;
  members: Map<string, MemberInfo>;
  buckets: Map<number, BucketInfo>;
}

/**
 * The session write: `stays` when the member stays in the view (a renewal, or a start on top of its
 * own live session), so its run of sessions keeps the `since` it began with.
 */
type SessionStep = { kind: "renew" | "start"; term: number; stays: boolean };

/** Member metadata key (over HTTP): when the member's unbroken run of live sessions began, wall-clock ms. */
const SINCE = "since";

/** When `m`'s unbroken run of sessions began: its `since`, or its session's start. */
function sinceOf(m: MemberInfo): number {
  const since = Number(m.stored.record.metadata[SINCE]);
  return Number.isSafeInteger(since) ? since : m.stored.record.acquiredAt;
}

// ---- what a member proves: its instance (docs/security.md) ----
// The caller's `instance` is never stored: its digest is, in the session record's `holderDigest`.
// The `proof` of a call is the instance and its digest; a session record written before digests
// (plain `instance` metadata) is recognised once, and rewritten with the digest by the renewal.

interface Proof {
  instance: string;
  digest: string;
}

async function proofOf(instance: string): Promise<Proof> {
  return { instance, digest: await instanceDigest(instance) };
}

/** Is `m`'s session run by the process that proves `proof`? (false for a library member's record) */
function sameInstance(m: MemberInfo, proof: Proof): boolean {
  const r = m.stored.record;
  return digestOf(r) === proof.digest || (digestOf(r) === undefined && r.metadata.instance === proof.instance);
}

export class ShardService {
  constructor(
    private readonly leases: LeaseService,
    private readonly clock: Clock,
    private readonly maxSkewMs: number,
    /** The most bucket records one heartbeat writes, so a call stays short on a big group; the rest at the next. */
    private readonly writesPerHeartbeat: number,
  ) {}

  /**
   * Renews (or starts) `member`'s session, takes what the assignment gives it, fences expired
   * members, and answers what it holds and what it is asked to give up.
   */
  async heartbeat(group: string, member: string, req: HeartbeatRequest, caller: Caller): Promise<HeartbeatView> {
    const name = memberName(group, member);
    const proof = await proofOf(req.instance);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const state = await this.read(group, caller, { buckets: req.buckets, leaseMs: req.leaseMs });
      const wall = this.clock.wallNow();
      const mine = state.members.get(member);
      const step = this.sessionStep(group, member, mine, req, proof, wall);
      const before = this.plan(state, member, step.term, req.leaseMs, wall);
      if (before.staleConfig) continue; // a re-shard under way: read the config again
      if (!mine) {
        if (state.members.size >= MAX_MEMBERS) throw groupFull(group);
        await this.leases.admitCreate(caller);
      }
      const since = step.stays && mine ? sinceOf(mine) : wall;
      const metadata = { ...memberMetadata(before.wants), [SINCE]: String(since) };
      const next = { ...sessionRecord(name, member, step, mine, req, metadata, wall), holderDigest: proof.digest };
      const outcome = await this.leases.writeChecked(name, next, mine?.stored ?? null, caller.by);
      if (outcome.kind === "lost") continue;
      state.members.set(member, decodeMember(group, outcome.stored)!);
      const complete = await this.act(group, state, member, step.term, req.leaseMs, before, wall);
      return this.answer(group, member, state, step.term, req.leaseMs, complete);
    }
    throw changedTooOften(group);
  }

  /**
   * `member` has stopped working on `bucket` at `term`: the bucket moves on as the assignment
   * says now (to the member that asked for it, back to this member at term + 1, or free).
   */
  async confirmHandoff(
    group: string,
    member: string,
    req: HandoffConfirmation,
    caller: Caller,
  ): Promise<HandoffResultView> {
    const proof = await proofOf(req.instance);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const state = await this.read(group, caller);
      const wall = this.clock.wallNow();
      const mine = this.requireSession(group, member, state.members.get(member), req.session, proof, wall);
      const b = state.buckets.get(req.bucket);
      if (!b || b.holder !== member || b.session !== req.session || b.term !== req.term) {
        throw new ProblemError(
          "bucket-not-held",
          `bucket ${req.bucket} of group "${group}" is not held by "${member}" at term ${req.term} under session ${req.session}${b ? ` (it is ${b.holder === null ? "free" : `held by "${b.holder}"`} at term ${b.term})` : " (it has no record)"}: nothing to hand off`,
        );
      }
      const plan = this.plan(state, member, req.session, mine.leaseMs, wall, { bucket: req.bucket, term: req.term });
      if (plan.staleConfig) continue;
      const config = state.config;
      const claim = plan.claims.find((c) => c.bucket === b.index);
      const transfer = plan.transfers.find((t) => t.current.index === b.index);
      let outcome: HandoffResultView["outcome"];
      let next: LeaseRecord;
      if (claim) {
        outcome = "kept";
        next = claimRecord(
          group,
          b.index,
          b,
          { holder: member, session: req.session, epoch: config.epoch, leaseMs: mine.leaseMs },
          wall,
        );
      } else if (transfer) {
        outcome = "transferred";
        next = transferRecord(b, { holder: transfer.to, session: transfer.session, epoch: config.epoch }, wall);
      } else {
        // Whatever else the planner says (release, or nothing while a re-shard settles): the work
        // has stopped, so the bucket is made free for whoever the assignment names.
        outcome = "released";
        next = releaseRecord(b, config.epoch, wall);
      }
      const written = await this.leases.writeChecked(next.name, next, b.stored, caller.by);
      if (written.kind === "lost") continue;
      const r = written.stored.record;
      return { bucket: b.index, outcome, holder: r.holder, term: r.term };
    }
    throw changedTooOften(group);
  }

  /** Ends `member`'s session (holder null, term kept): every bucket it held is free at once. */
  async leave(group: string, member: string, req: LeaveRequest, caller: Caller): Promise<MemberLeftView> {
    const name = memberName(group, member);
    const proof = await proofOf(req.instance);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const stored = await this.leases.get(name);
      const mine = stored ? decodeMember(group, stored) : undefined;
      // Idempotent: a repeated leave of the same session, by the process that left it.
      if (mine && mine.holder === null && mine.term === req.session && sameInstance(mine, proof)) {
        return { group, member, session: req.session };
      }
      const wall = this.clock.wallNow();
      const live = mine !== undefined && mine.holder === member && !this.leases.isFree(mine.stored.record, wall);
      if (!mine || mine.holder !== member || mine.term !== req.session || !sameInstance(mine, proof)) {
        if (live && !sameInstance(mine, proof)) throw memberInUse(group, member, mine);
        throw sessionEnded(group, member, mine, req.session, wall, this.maxSkewMs);
      }
      // The digest stays, so a repeated leave by this process is recognised (and only by it).
      const next = { ...releasedRecord(mine.stored.record, wall, {}), holderDigest: proof.digest };
      const outcome = await this.leases.writeChecked(name, next, mine.stored, caller.by);
      if (outcome.kind === "applied") return { group, member, session: req.session };
    }
    throw changedTooOften(group);
  }

  // ---- reading the group ----

  private async read(
    group: string,
    caller: Caller,
    create?: { buckets: number | undefined; leaseMs: number },
  ): Promise<Group> {
    const config = await this.config(group, caller, create);
    const members = new Map<string, MemberInfo>();
    for (const stored of await this.leases.children(membersPrefix(group), MAX_MEMBERS + 1)) {
      const m = decodeMember(group, stored);
      if (m) members.set(m.id, m);
    }
    const buckets = new Map<number, BucketInfo>();
    for (const stored of await this.leases.children(bucketsPrefix(group), MAX_BUCKETS)) {
      const b = decodeBucket(group, stored);
      if (b) buckets.set(b.index, b);
    }
    return { config, members, buckets };
  }

  /** The group's config; created with `create.buckets` when the group does not exist yet. */
  private async config(
    group: string,
    caller: Caller,
    create?: { buckets: number | undefined; leaseMs: number },
  ): Promise<GroupConfig> {
    const name = configName(group);
    let stored: Stored | null = await this.leases.get(name);
    if (!stored) {
      const refusal = legacyGroupRefusal(group, (await this.leases.get(legacyConfigName(group)))?.record);
      if (refusal) throw new ProblemError("not-a-group", refusal);
      if (create?.buckets === undefined) {
        throw new ProblemError(
          "not-found",
          `group "${group}" does not exist${create ? ": send buckets (the count it starts with) to start it" : ""}`,
        );
      }
      const fresh = configRecord(
        group,
        { buckets: create.buckets, epoch: 1, previous: 0 },
        create.leaseMs,
        this.clock.wallNow(),
      );
      await this.leases.admitCreate(caller);
      const outcome = await this.leases.writeChecked(name, fresh, null, caller.by);
      stored = outcome.kind === "applied" ? outcome.stored : (outcome.current ?? (await this.leases.get(name)));
      if (!stored) throw changedTooOften(group);
    }
    const config = decodeConfig(stored.record);
    // Never overwritten: the name is a plain lease's, or an operator must look (or rewrite it with
    // reshard()). The caller's request is fine; the group name is taken.
    if (!config || !isGroupConfig(stored.record)) {
      throw new ProblemError(
        "not-a-group",
        `"${name}" is not a sharded group's config (it is a plain lease, or a record without a bucket count and epoch): "${group}" cannot be a group; use another group name, or have an operator look at the record`,
      );
    }
    return config;
  }

  // ---- deciding ----

  /**
   * What the session write is: a renewal of the caller's own live session, or a new one.
   *
   * - With `session`: renewed only while the member could still be inside its window. The member's
   *   window closes at `sentAt + leaseMs - safetyMs` of its last answered heartbeat, which the
   *   server renewed (stamping `renewedAt`) after that send; so a renewal arriving after
   *   `renewedAt + leaseMs` comes from a member whose work has stopped (or whose answer will come
   *   too late to act on). Renewing it would list the same buckets at the terms it stopped, which
   *   it may never start again: it is refused, and the member starts the next session.
   * - Without `session`: a new session (term + 1) on top of the member's own live one when the
   *   member names that session as ended; a session newer than the one it names is one it never
   *   acted on (a start whose answer was lost, or a start that arrived late, after a newer one):
   *   it is renewed, never ended, since the member may be working under it now.
   */
  private sessionStep(
    group: string,
    member: string,
    mine: MemberInfo | undefined,
    req: HeartbeatRequest,
    proof: Proof,
    wall: number,
  ): SessionStep {
    const live = mine !== undefined && mine.holder === member && !this.leases.isFree(mine.stored.record, wall);
    const ours = live && sameInstance(mine, proof);
    // `ended` at or past the session named says that session is over for the member: a start, never
    // a renewal of work it stopped. An older `ended` beside `session` says nothing new and is ignored.
    if (req.session !== undefined && (req.ended === undefined || req.ended < req.session)) {
      if (ours && mine.term === req.session && !this.pastWindow(mine, wall)) {
        return { kind: "renew", term: mine.term, stays: true };
      }
      if (live && !ours) throw memberInUse(group, member, mine);
      throw sessionEnded(group, member, mine, req.session, wall, this.maxSkewMs);
    }
    if (live && !ours) throw memberInUse(group, member, mine);
    if (ours && mine.term > (req.ended ?? 0)) return { kind: "renew", term: mine.term, stays: true };
    return { kind: "start", term: (mine?.term ?? 0) + 1, stays: ours };
  }

  /** `renewedAt + leaseMs` has passed on this server's clock: no member can still be inside the window. */
  private pastWindow(m: MemberInfo, wall: number): boolean {
    const r = m.stored.record;
    return pastExpiry(r.renewedAt + r.leaseMs, wall, 0);
  }

  /** The caller's live session, the one it names from its own instance; otherwise the problem. */
  private requireSession(
    group: string,
    member: string,
    mine: MemberInfo | undefined,
    session: number,
    proof: Proof,
    wall: number,
  ): MemberInfo {
    const live = mine !== undefined && mine.holder === member && !this.leases.isFree(mine.stored.record, wall);
    if (live && !sameInstance(mine, proof)) throw memberInUse(group, member, mine);
    if (live && mine.term === session) return mine;
    throw sessionEnded(group, member, mine, session, wall, this.maxSkewMs);
  }

  /**
   * The planner run for `member` under `session`. Every bucket it holds under that session counts
   * as running (`tenures`), except one whose work it has just confirmed stopped (`ended`).
   */
  private plan(
    state: Group,
    member: string,
    session: number,
    settleMs: number,
    wall: number,
    ended?: { bucket: number; term: number },
  ): Plan {
    const expired = new Set<string>();
    for (const m of state.members.values()) {
      if (m.id !== member && m.holder !== null && this.leases.isFree(m.stored.record, wall)) expired.add(m.id);
    }
    const tenures = new Map<number, number>();
    for (const b of state.buckets.values()) {
      if (b.holder === member && b.session === session && b.index !== ended?.bucket) tenures.set(b.index, b.term);
    }
    return planShards({
      me: member,
      session,
      config: state.config,
      members: state.members,
      expired,
      buckets: state.buckets,
      tenures,
      lastEnded: ended ? new Map([[ended.bucket, ended.term]]) : new Map(),
      stable: wall - this.viewChangedAt(state.members, wall) >= settleMs,
      batch: Math.max(1, Math.ceil(state.config.buckets / 8)),
      wants: state.members.get(member)?.wants ?? [],
      stopping: false,
    });
  }

  /**
   * When the live view last changed, by the records' own stamps: a live member's joining (the start
   * of its unbroken run of sessions: a member that starts its next session on top of its own live
   * one never left the view), a session's end (released or fenced), or an unfenced session's expiry.
   */
  private viewChangedAt(members: ReadonlyMap<string, MemberInfo>, wall: number): number {
    let at = 0;
    for (const m of members.values()) {
      const r = m.stored.record;
      if (m.holder === null) at = Math.max(at, r.renewedAt);
      else if (this.leases.isFree(r, wall))
        at = Math.max(at, r.renewedAt + r.leaseMs + this.maxSkewMs); // when it turned free
      else at = Math.max(at, sinceOf(m));
    }
    return at;
  }

  // ---- acting ----

  /**
   * Carries out the plan for the caller, whose session was just written: fences first (they end
   * expired sessions, whose buckets the planner then counts as free), then stamps, creates,
   * releases and claims. A write that fails is left for the next call. Returns whether every
   * proposed claim was tried.
   */
  private async act(
    group: string,
    state: Group,
    member: string,
    session: number,
    leaseMs: number,
    before: Plan,
    wall: number,
  ): Promise<boolean> {
    await parallel(
      before.fences.map((m) => async () => {
        const stored = await this.tryWrite(fenceRecord(m, member, wall), m.stored);
        const info = stored && decodeMember(group, stored);
        if (info) state.members.set(info.id, info);
      }),
    );
    const plan = this.plan(state, member, session, leaseMs, wall);
    if (plan.staleConfig) return false;
    const epoch = state.config.epoch;
    const planned: Array<{ next: LeaseRecord; current: Stored | null }> = [
      ...plan.stamps.map((b) => ({ next: stampRecord(b, epoch), current: b.stored })),
      ...plan.creates.map((i) => ({ next: freeBucketRecord(group, i, epoch, leaseMs, wall), current: null })),
      // With every bucket of the caller counted as running, these are records of sessions that are over.
      ...plan.releases.map((r) => ({ next: releaseRecord(r.current, epoch, wall), current: r.current.stored })),
      ...plan.claims.map((c) => ({
        next: claimRecord(group, c.bucket, c.current, { holder: member, session, epoch, leaseMs }, wall),
        current: c.current?.stored ?? null,
      })),
    ];
    // Bounded per call (bucketWritesPerHeartbeat): the rest at the next heartbeat, which comes
    // sooner while the answer is not settled.
    const writes = planned.slice(0, this.writesPerHeartbeat);
    await parallel(
      writes.map((w) => async () => {
        const stored = await this.tryWrite(w.next, w.current);
        const info = stored && decodeBucket(group, stored);
        if (info) state.buckets.set(info.index, info);
      }),
    );
    return planned.length <= writes.length;
  }

  /** One checked write; the record now current (ours or another's), or `undefined` when the store failed. */
  private async tryWrite(next: LeaseRecord, current: Stored | null): Promise<Stored | null | undefined> {
    try {
      const outcome = await this.leases.writeChecked(next.name, next, current);
      return outcome.kind === "applied" ? outcome.stored : outcome.current;
    } catch (error) {
      if (error instanceof ProblemError && error.kind === "store-unavailable") return undefined;
      throw error;
    }
  }

  /** The answer: what the caller holds now, split into buckets to work on and buckets to give up. */
  private answer(
    group: string,
    member: string,
    state: Group,
    session: number,
    leaseMs: number,
    complete: boolean,
  ): HeartbeatView {
    const wall = this.clock.wallNow();
    const plan = this.plan(state, member, session, leaseMs, wall);
    const { buckets: N, epoch } = state.config;
    const asked = new Map(plan.handoffs.map((h) => [h.bucket, h.to]));
    const held: HeartbeatView["held"] = [];
    const handoffs: HeartbeatView["handoffs"] = [];
    for (const b of [...state.buckets.values()].sort((x, y) => x.index - y.index)) {
      if (b.holder !== member || b.session !== session) continue;
      // Held under an older bucket count (or one newer than the config read): its keys map
      // differently now, so its work stops and the bucket is released.
      if (plan.staleConfig || b.held !== epoch || b.index >= N) {
        handoffs.push({ bucket: b.index, term: b.term, to: null, reason: "resharded" });
      } else if (asked.has(b.index)) {
        handoffs.push({ bucket: b.index, term: b.term, to: asked.get(b.index)!, reason: "handoff" });
      } else held.push({ bucket: b.index, term: b.term });
    }
    return {
      group,
      member,
      session,
      leaseMs,
      buckets: N,
      epoch,
      held,
      handoffs,
      members: plan.view,
      unowned: plan.unowned,
      settled: complete && plan.settled && handoffs.length === 0,
    };
  }
}

/** The session record a heartbeat writes: the caller's renewed, or a new session at `step.term`. */
function sessionRecord(
  name: string,
  member: string,
  step: SessionStep,
  mine: MemberInfo | undefined,
  req: HeartbeatRequest,
  metadata: Record<string, string>,
  wall: number,
): LeaseRecord {
  if (step.kind === "renew" && mine) {
    return {
      ...mine.stored.record,
      holder: member,
      leaseMs: req.leaseMs,
      metadata,
      renewedAt: wall,
      writeId: newWriteId(),
    };
  }
  return {
    name,
    holder: member,
    term: step.term,
    leaseMs: req.leaseMs,
    acquiredAt: wall,
    renewedAt: wall,
    metadata,
    writeId: newWriteId(),
  };
}

function memberInUse(group: string, member: string, mine: MemberInfo): ProblemError {
  const r = mine.stored.record;
  return new ProblemError(
    "member-in-use",
    `member "${member}" of group "${group}" has a live session (${mine.term}) of another process (another instance, or a library member): a process reusing the id waits until that session expires (renewedAt ${r.renewedAt} + leaseMs ${r.leaseMs} + the server's skew bound), then starts the next`,
  );
}

function sessionEnded(
  group: string,
  member: string,
  mine: MemberInfo | undefined,
  session: number,
  wall: number,
  maxSkewMs: number,
): ProblemError {
  let why: string;
  if (!mine) why = "the member has no session record";
  else if (mine.term > session) why = `it was replaced by session ${mine.term}`;
  else if (mine.term < session) why = `the member's session is ${mine.term}: session ${session} never existed`;
  else if (mine.holder === null) why = mine.fencedBy ? `"${mine.fencedBy}" ended it after it expired` : "it was left";
  else {
    const r = mine.stored.record;
    const late = wall - (r.renewedAt + r.leaseMs);
    why =
      wall > r.renewedAt + r.leaseMs + maxSkewMs
        ? `it expired ${wall - (r.renewedAt + r.leaseMs + maxSkewMs)} ms ago (no heartbeat within leaseMs)`
        : `this heartbeat arrived ${late} ms after renewedAt + leaseMs, when the member's own window had closed: its work has stopped, and renewing would hand back terms it stopped`;
  }
  return new ProblemError(
    "session-ended",
    `session ${session} of member "${member}" in group "${group}" is over (${why}): stop all work, then heartbeat without a session (ended: ${session}) to start the next`,
  );
}

function groupFull(group: string): ProblemError {
  return new ProblemError(
    "group-full",
    `group "${group}" has ${MAX_MEMBERS} members, the most one group has (a group never uses more members than its ${MAX_BUCKETS} buckets at the most): a member joins when another leaves`,
  );
}

function changedTooOften(group: string): ProblemError {
  return new ProblemError("store-unavailable", `group "${group}" changed ${ATTEMPTS} times while deciding; retry`, {
    retryAfter: 1,
  });
}

/** Runs `tasks` at most PARALLEL_WRITES at a time. */
async function parallel(tasks: Array<() => Promise<void>>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_WRITES, tasks.length) }, lane));
}
