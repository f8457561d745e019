/**
 * What one member should do next, decided from what it has seen (docs/sharding.md, "Protocol").
 * A pure function of plain data: the sharded elector runs it after every poll, tests drive it
 * directly, and the HTTP API's sharding routes can run it for a remote member.
 *
 * Every action it proposes is a compare-and-swap on a revision the member read, so a stale input
 * can only make an action fail, never make it unsafe:
 * - a bucket is taken only when its record is free (no record, holder null) or names a session
 *   that is over for good (`sessionMayLive`), and only by its target owner;
 * - a member whose session expired by observed time is first fenced (its record released at the
 *   observed revision), which is what makes its buckets' sessions over for good;
 * - a bucket held by a live session moves only by its owner's hand-off, asked for by the target
 *   (its `wants`), once the view has been stable for the settle period on both sides;
 * - after a change of the bucket count (a new config epoch) nothing is taken until no bucket is
 *   held under an older epoch by a session that may live (the epoch barrier), so no key is ever
 *   worked on under two bucket counts at once.
 */
import { targetAssignment } from "./assignment.js";
import { type BucketInfo, type GroupConfig, MAX_WANTS, type MemberInfo } from "./layout.js";
import { sessionMayLive } from "./membership.js";

export interface PlanInput {
  me: string;
  /** This member's session term while valid; `undefined` proposes nothing but fences-free reading. */
  session: number | undefined;
  config: GroupConfig;
  /** The latest member records, by id. */
  members: ReadonlyMap<string, MemberInfo>;
  /** Members whose sessions have expired by this member's observed time (not yet fenced). */
  expired: ReadonlySet<string>;
  /** The newest known record of every bucket that has one, by index. */
  buckets: ReadonlyMap<number, BucketInfo>;
  /** Buckets this member is working on now (a running tenure), with the tenure's term. */
  tenures: ReadonlyMap<number, number>;
  /** Per bucket, the highest term whose tenure this member has ended: never started again. */
  lastEnded: ReadonlyMap<number, number>;
  /** The view has not changed for the settle period: buckets held by live members may move. */
  stable: boolean;
  /** The most buckets this member asks for at once. */
  batch: number;
  /** The hand-offs this member asks for now. */
  wants: readonly number[];
  /** Leaving: take nothing, ask for nothing. */
  stopping: boolean;
}

export type ClaimKind = "fresh" | "takeover" | "reestablish";

export interface Plan {
  /** The live members the target is computed over. */
  view: string[];
  /** Target owner per bucket index below the count. */
  target: Array<string | undefined>;
  /** Expired members to fence (release their record at the observed revision). */
  fences: MemberInfo[];
  /** Buckets to take with term + 1: free, or held by a session over for good (ours included). */
  claims: Array<{ bucket: number; current: BucketInfo | undefined; kind: ClaimKind }>;
  /** Buckets held by us whose tenure should start now (given to us, or a late-landed claim). */
  adopt: BucketInfo[];
  /** Running tenures to end and hand to `to` (whose session is `session`) with term + 1. */
  handoffs: Array<{ bucket: number; to: string; session: number }>;
  /** Our records without a running tenure to hand to their target, who asked. */
  transfers: Array<{ current: BucketInfo; to: string; session: number }>;
  /** Records to release (holder null, term kept): ours without work, or beyond the count and dead. */
  releases: Array<{ current: BucketInfo; retire: boolean }>;
  /** Records of an older epoch to stamp with the current one (holder and term kept). */
  stamps: BucketInfo[];
  /** Bucket indexes below the previous count that have no record: created free and stamped. */
  creates: number[];
  /** What to ask for: buckets whose target is us and that live members hold. */
  wants: number[];
  /** Buckets below the count that nobody is working on (free, expired, being moved, or waiting on the barrier). */
  unowned: number;
  /** Ownership equals the target, every bucket is owned, nothing asked, no barrier. */
  settled: boolean;
  /** A record names an epoch newer than our config: read the config again before acting. */
  staleConfig: boolean;
  /** Holdings of an older epoch remain: nothing is taken yet. */
  barrier: boolean;
}

/** The members the target is computed over: live by our observation, and us while our session is valid and we stay. */
export function liveView(input: Pick<PlanInput, "me" | "session" | "members" | "expired" | "stopping">): string[] {
  const view = [...input.members.values()]
    .filter((m) => m.id !== input.me && m.holder !== null && !input.expired.has(m.id))
    .map((m) => m.id);
  if (input.session !== undefined && !input.stopping) view.push(input.me);
  return view.sort();
}

export function planShards(input: PlanInput): Plan {
  const { me, session, config, members, expired, buckets, tenures, lastEnded } = input;
  const N = config.buckets;
  const E = config.epoch;
  const mayLive = (b: BucketInfo) =>
    b.holder !== null &&
    (b.holder === me ? session !== undefined && b.session === session : sessionMayLive(members, b.holder, b.session));
  const ended = (b: BucketInfo) => b.term <= (lastEnded.get(b.index) ?? 0);

  const view = liveView(input);
  const inView = new Set(view);

  let staleConfig = false;
  let barrier = false;
  const stamps: BucketInfo[] = [];
  for (const b of buckets.values()) {
    if (b.epoch > E || b.held > E) staleConfig = true;
    if (b.epoch < E) {
      stamps.push(b);
      barrier = true;
    }
    if (b.holder !== null && b.held < E && mayLive(b)) barrier = true;
  }
  const creates: number[] = [];
  for (let i = 0; i < config.previous; i++) {
    if (!buckets.has(i)) {
      creates.push(i);
      barrier = true;
    }
  }

  // Who owns what now, for the sticky target: live holders in the view, holding in this epoch.
  const owners: Array<string | undefined> = new Array(N).fill(undefined);
  for (let i = 0; i < N; i++) {
    const b = buckets.get(i);
    if (b?.holder != null && b.held === E && mayLive(b) && inView.has(b.holder)) owners[i] = b.holder;
  }
  const target = targetAssignment({ members: view, buckets: N, owners });

  const plan: Plan = {
    view,
    target,
    fences: [],
    claims: [],
    adopt: [],
    handoffs: [],
    transfers: [],
    releases: [],
    stamps: [],
    creates: [],
    wants: [],
    unowned: 0,
    settled: false,
    staleConfig,
    barrier,
  };

  let owned = 0;
  let matching = 0;
  for (let i = 0; i < N; i++) {
    const b = buckets.get(i);
    const live = b !== undefined && mayLive(b) && !expired.has(b.holder!) && b.held === E;
    const working = live && (b.holder !== me || tenures.has(i) || !ended(b));
    if (working) owned++;
    if (working && b.holder === target[i]) matching++;
  }
  plan.unowned = N - owned;

  if (session === undefined || staleConfig) return plan;

  plan.fences = [...members.values()].filter((m) => m.id !== me && m.holder !== null && expired.has(m.id));
  plan.stamps = stamps;
  plan.creates = creates;

  const asks = (to: string | undefined, bucket: number): to is string =>
    to !== undefined &&
    to !== me &&
    input.stable &&
    !barrier &&
    (members.get(to)?.wants.includes(bucket) ?? false) &&
    members.get(to)?.holder !== null &&
    !expired.has(to);

  const indexes = new Set<number>([...buckets.keys(), ...tenures.keys()]);
  for (let i = 0; i < N; i++) indexes.add(i);
  for (const i of [...indexes].sort((a, b) => a - b)) {
    const b = buckets.get(i);
    if (tenures.has(i)) {
      const to = target[i];
      if (asks(to, i)) plan.handoffs.push({ bucket: i, to, session: members.get(to)!.term });
      continue;
    }
    if (b && b.holder === me && b.session === session) {
      // Ours under the current session, with no work running on it.
      if (b.held < E || i >= N) plan.releases.push({ current: b, retire: i >= N });
      else if (!ended(b)) {
        if (!input.stopping) plan.adopt.push(b);
      } else if (input.stopping) continue;
      else if (target[i] === me && !barrier) plan.claims.push({ bucket: i, current: b, kind: "reestablish" });
      else if (asks(target[i], i)) {
        const to = target[i]!;
        plan.transfers.push({ current: b, to, session: members.get(to)!.term });
      } else plan.releases.push({ current: b, retire: false });
      continue;
    }
    if (b && mayLive(b)) continue; // a live member's (or one not yet fenced)
    // Free: no record, released, or its session is over for good.
    if (i >= N) {
      if (b && b.holder !== null) plan.releases.push({ current: b, retire: true });
      continue;
    }
    if (barrier || input.stopping || target[i] !== me) continue;
    const kind: ClaimKind = !b || b.holder === null ? "fresh" : b.holder === me ? "reestablish" : "takeover";
    plan.claims.push({ bucket: i, current: b, kind });
  }

  if (!input.stopping && input.stable && !barrier) {
    const candidates = new Set<number>();
    for (let i = 0; i < N; i++) {
      const b = buckets.get(i);
      if (target[i] === me && b && b.holder !== null && b.holder !== me && b.held === E && mayLive(b)) {
        if (!expired.has(b.holder)) candidates.add(i);
      }
    }
    // At most MAX_WANTS at once, whatever the batch: the list rides in the member record's
    // metadata, which holds 1 KiB; more hand-offs simply follow on later renewals.
    const most = Math.min(input.batch, MAX_WANTS);
    const wants = input.wants.filter((w) => candidates.has(w)).slice(0, most);
    for (const i of candidates) {
      if (wants.length >= most) break;
      if (!wants.includes(i)) wants.push(i);
    }
    plan.wants = wants.sort((a, b) => a - b);
  }

  let heldBeyond = false;
  for (const b of buckets.values()) if (b.index >= N && b.holder !== null) heldBeyond = true;
  plan.settled = !barrier && plan.unowned === 0 && matching === N && plan.wants.length === 0 && !heldBeyond;
  return plan;
}
