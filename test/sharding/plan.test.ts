/**
 * The planner's rules (src/sharding/plan.ts), one at a time, on hand-built records: what may be
 * taken, what must be fenced first, when buckets move, and the epoch barrier.
 */
import { describe, expect, it } from "vitest";
import { type LeaseRecord, validateRecord } from "../../src/lease.js";
import {
  type BucketInfo,
  bucketMetadata,
  bucketName,
  decodeBucket,
  decodeMember,
  MAX_WANTS,
  type MemberInfo,
  memberMetadata,
  memberName,
} from "../../src/sharding/layout.js";
import { type PlanInput, planShards } from "../../src/sharding/plan.js";

let revision = 0;

function record(name: string, patch: Partial<LeaseRecord>): LeaseRecord {
  return {
    name,
    holder: null,
    term: 0,
    leaseMs: 1000,
    acquiredAt: 0,
    renewedAt: 0,
    metadata: {},
    writeId: `w${revision}`,
    ...patch,
  };
}

function member(id: string, term: number, options: { holder?: string | null; wants?: number[] } = {}): MemberInfo {
  const holder = options.holder === undefined ? id : options.holder;
  const r = record(memberName("g", id), { holder, term, metadata: memberMetadata(options.wants ?? []) });
  return decodeMember("g", { record: r, revision: String(++revision) })!;
}

function bucket(index: number, holder: string | null, term: number, session = 1, epoch = 1, held = epoch): BucketInfo {
  const meta = bucketMetadata(holder === null ? null : { session, held }, epoch);
  const r = record(bucketName("g", index), { holder, term, metadata: meta });
  return decodeBucket("g", { record: r, revision: String(++revision) })!;
}

function input(patch: Partial<PlanInput> & Pick<PlanInput, "members" | "buckets">): PlanInput {
  return {
    me: "a",
    session: 1,
    config: { buckets: 4, epoch: 1, previous: 0 },
    expired: new Set(),
    tenures: new Map(),
    lastEnded: new Map(),
    stable: true,
    batch: 4,
    wants: [],
    stopping: false,
    ...patch,
  };
}

const byId = (...ms: MemberInfo[]) => new Map(ms.map((m) => [m.id, m]));
const byIndex = (...bs: BucketInfo[]) => new Map(bs.map((b) => [b.index, b]));

describe("planShards", () => {
  it("alone in a new group: claims every bucket as fresh", () => {
    const plan = planShards(input({ members: byId(member("a", 1)), buckets: new Map() }));
    expect(plan.claims.map((c) => [c.bucket, c.kind])).toEqual([
      [0, "fresh"],
      [1, "fresh"],
      [2, "fresh"],
      [3, "fresh"],
    ]);
    expect(plan.unowned).toBe(4);
  });

  it("never takes a bucket whose holder's session may live, even when the target names us", () => {
    const members = byId(member("a", 1), member("b", 3));
    // b's session 3 holds everything; a's target share stays b's until b hands it over.
    const buckets = byIndex(...[0, 1, 2, 3].map((i) => bucket(i, "b", 5, 3)));
    const plan = planShards(input({ members, buckets }));
    expect(plan.claims).toEqual([]);
    expect(plan.wants.length).toBe(2);
    // A member record older than the bucket's session (a stale listing) is no evidence either.
    const stale = planShards(input({ members: byId(member("a", 1), member("b", 2)), buckets }));
    expect(stale.claims).toEqual([]);
  });

  it("an expired member is fenced first; its buckets are taken only once its record shows the session over", () => {
    const buckets = byIndex(...[0, 1, 2, 3].map((i) => bucket(i, "b", 5, 3)));
    const expiredPlan = planShards(
      input({ members: byId(member("a", 1), member("b", 3)), buckets, expired: new Set(["b"]) }),
    );
    expect(expiredPlan.fences.map((m) => m.id)).toEqual(["b"]);
    expect(expiredPlan.claims).toEqual([]);
    expect(expiredPlan.unowned).toBe(4);
    const fenced = planShards(input({ members: byId(member("a", 1), member("b", 3, { holder: null })), buckets }));
    expect(fenced.fences).toEqual([]);
    expect(fenced.claims.map((c) => [c.bucket, c.kind])).toEqual([
      [0, "takeover"],
      [1, "takeover"],
      [2, "takeover"],
      [3, "takeover"],
    ]);
    const restarted = planShards(input({ members: byId(member("a", 1), member("b", 4)), buckets }));
    expect(restarted.claims.filter((c) => restarted.target[c.bucket] === "a").length).toBe(restarted.claims.length);
  });

  it("re-establishes our own buckets after a new session, by claim (term + 1), never by assuming them", () => {
    const buckets = byIndex(...[0, 1, 2, 3].map((i) => bucket(i, "a", 2, 1)));
    const plan = planShards(input({ members: byId(member("a", 2)), buckets, session: 2 }));
    expect(plan.adopt).toEqual([]);
    expect(plan.claims.map((c) => c.kind)).toEqual(["reestablish", "reestablish", "reestablish", "reestablish"]);
  });

  it("adopts a record that names us under our session; leaves a tenure it ended (parked) to release or re-claim", () => {
    const members = byId(member("a", 1));
    const given = planShards(input({ members, buckets: byIndex(bucket(0, "a", 3)) }));
    expect(given.adopt.map((b) => b.index)).toEqual([0]);
    const parked = planShards(input({ members, buckets: byIndex(bucket(0, "a", 3)), lastEnded: new Map([[0, 3]]) }));
    expect(parked.adopt).toEqual([]);
    expect(parked.claims.map((c) => [c.bucket, c.kind])).toContainEqual([0, "reestablish"]);
    const b = member("b", 1);
    const parkedForB = planShards(
      input({
        members: byId(member("a", 1), b),
        buckets: byIndex(bucket(0, "a", 3), bucket(1, "a", 1), bucket(2, "b", 1), bucket(3, "b", 1)),
        lastEnded: new Map([[0, 3]]),
        config: { buckets: 4, epoch: 1, previous: 0 },
      }),
    );
    const to = parkedForB.target[0];
    if (to === "b") expect(parkedForB.releases.map((r) => r.current.index)).toEqual([0]);
    else expect(parkedForB.claims.map((c) => c.bucket)).toEqual([0]);
  });

  it("hands a running bucket over only when its target asks for it and the view is stable", () => {
    const buckets = byIndex(...[0, 1, 2, 3].map((i) => bucket(i, "a", 1)));
    const tenures = new Map([0, 1, 2, 3].map((i) => [i, 1]));
    const quiet = planShards(input({ members: byId(member("a", 1), member("b", 1)), buckets, tenures }));
    expect(quiet.handoffs).toEqual([]);
    const bWants = quiet.target.flatMap((t, i) => (t === "b" ? [i] : []));
    const members = byId(member("a", 1), member("b", 1, { wants: bWants }));
    const asked = planShards(input({ members, buckets, tenures }));
    expect(asked.handoffs.map((h) => [h.bucket, h.to])).toEqual(bWants.map((i) => [i, "b"]));
    expect(planShards(input({ members, buckets, tenures, stable: false })).handoffs).toEqual([]);
    // A request for a bucket the target does not give it is ignored.
    const greedy = byId(member("a", 1), member("b", 1, { wants: [0, 1, 2, 3] }));
    expect(planShards(input({ members: greedy, buckets, tenures })).handoffs.map((h) => h.bucket)).toEqual(bWants);
  });

  it("asks for at most `batch` buckets, keeps what it already asked for, and asks for nothing unless stable", () => {
    const members = byId(member("a", 1), member("b", 1));
    const buckets = byIndex(...Array.from({ length: 16 }, (_, i) => bucket(i, "b", 1)));
    const config = { buckets: 16, epoch: 1, previous: 0 };
    const first = planShards(input({ members, buckets, config, batch: 3 }));
    expect(first.wants).toHaveLength(3);
    const again = planShards(input({ members, buckets, config, batch: 3, wants: [first.wants[2]!] }));
    expect(again.wants).toContain(first.wants[2]);
    expect(planShards(input({ members, buckets, config, stable: false })).wants).toEqual([]);
    expect(planShards(input({ members, buckets, config, stopping: true })).wants).toEqual([]);
  });

  it("asks for at most MAX_WANTS at once in a large group, so its member record stays within the metadata limit", () => {
    const N = 4096;
    const members = byId(member("a", 1), member("b", 1));
    const buckets = byIndex(...Array.from({ length: N }, (_, i) => bucket(i, "b", 1)));
    const config = { buckets: N, epoch: 1, previous: 0 };
    const plan = planShards(input({ members, buckets, config, batch: Math.ceil(N / 8) }));
    expect(plan.wants).toHaveLength(MAX_WANTS);
    // The member record that carries them is a valid record (metadata within 1 KiB).
    const asked = record(memberName("g", "a"), {
      holder: "a",
      term: 1,
      metadata: { ...memberMetadata(plan.wants), instance: "i".repeat(64) },
    });
    expect(() => validateRecord(asked)).not.toThrow();
  });

  it("after a new epoch: nothing is taken while a live session holds a bucket of the old one; ours is released", () => {
    const config = { buckets: 4, epoch: 2, previous: 4 };
    const members = byId(member("a", 1), member("b", 1));
    const buckets = byIndex(
      bucket(0, "a", 1, 1, 2, 1),
      bucket(1, "b", 1, 1, 2, 1),
      bucket(2, null, 1, 1, 2),
      bucket(3, null, 1, 1, 2),
    );
    const plan = planShards(input({ members, buckets, config }));
    expect(plan.barrier).toBe(true);
    expect(plan.claims).toEqual([]);
    expect(plan.releases.map((r) => r.current.index)).toEqual([0]);
    const unstamped = planShards(input({ members, buckets: byIndex(bucket(0, null, 1, 1, 1)), config }));
    expect(unstamped.stamps.map((b) => b.index)).toEqual([0]);
    expect(unstamped.creates).toEqual([1, 2, 3]);
    expect(unstamped.claims).toEqual([]);
  });

  it("reads the config again instead of acting when a record is newer than it", () => {
    const plan = planShards(input({ members: byId(member("a", 1)), buckets: byIndex(bucket(0, null, 1, 1, 3)) }));
    expect(plan.staleConfig).toBe(true);
    expect(plan.claims).toEqual([]);
  });

  it("releases records beyond the count whose session is over, and proposes nothing without a session", () => {
    const members = byId(member("a", 1), member("b", 2));
    const plan = planShards(input({ members, buckets: byIndex(bucket(6, "b", 4, 1)) }));
    expect(plan.releases).toMatchObject([{ current: { index: 6 }, retire: true }]);
    const none = planShards(input({ members, buckets: new Map(), session: undefined }));
    expect([none.claims, none.fences, none.releases, none.wants]).toEqual([[], [], [], []]);
  });
});
