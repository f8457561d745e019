/**
 * Changing a group's bucket count with `reshard` (docs/sharding.md, "Changing the bucket count"):
 * the members follow the config record, stop all work, release, and take buckets again under the
 * new count only once nothing is held under the old one, so no key is worked on under two counts
 * at once; records beyond the new count end free and stay free.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/backends/memory/store.js";
import { LeaseValidationError } from "../../src/errors.js";
import { bucketOf } from "../../src/sharding/bucket-of.js";
import { bucketName, configName, decodeBucket, decodeConfig } from "../../src/sharding/layout.js";
import { reshard } from "../../src/sharding/reshard.js";
import { Group, type Group as GroupType, TIMING } from "./group-harness.js";

const { leaseMs, settleMs } = TIMING;
const KEYS = Array.from({ length: 500 }, (_, i) => `key-${i}`);

interface Interval {
  member: string;
  bucket: number;
  buckets: number;
  term: number;
  from: number;
  to: number;
}

/** Each tenure as [assigned, revoked) on true time (an open one runs to now). */
function intervals(g: GroupType): Interval[] {
  return g.assignments.map((a) => {
    const end = g.revocations.find((r) => r.member === a.member && r.bucket === a.bucket && r.term === a.term);
    return {
      member: a.member,
      bucket: a.bucket,
      buckets: a.buckets,
      term: a.term,
      from: a.at,
      to: end?.at ?? g.clock.now(),
    };
  });
}

/** Pairs of tenures that overlapped in time and cover a common key. */
function keyOverlaps(g: GroupType): string[] {
  const all = intervals(g);
  const out: string[] = [];
  for (let i = 0; i < all.length; i++) {
    for (let j = i + 1; j < all.length; j++) {
      const a = all[i]!;
      const b = all[j]!;
      if (a.from >= b.to || b.from >= a.to) continue;
      const shared = KEYS.find((k) => bucketOf(k, a.buckets) === a.bucket && bucketOf(k, b.buckets) === b.bucket);
      if (shared) out.push(`${shared}: ${JSON.stringify(a)} and ${JSON.stringify(b)}`);
    }
  }
  return out;
}

/** Two members; b polls less often once settled, so it notices a new count well after a does. */
async function balancedPair(buckets: number): Promise<GroupType> {
  const g = new Group(buckets);
  g.join("a");
  g.join("b", { pollMs: 800, renewMs: 300 });
  await g.until(() => g.balanced(["a", "b"]), settleMs + 10 * leaseMs);
  await g.clock.advance(2 * settleMs); // settled: both poll at their slow pace now
  return g;
}

describe("reshard", () => {
  it("grows 8 -> 12: every member stops, then all 12 are shared out; no key is worked on under both counts at once", async () => {
    const g = await balancedPair(8);
    const changedAt = g.clock.now();
    const result = await reshard({ store: g.store, group: "g", buckets: 12, clock: g.clock });
    expect(result).toMatchObject({ from: 8, to: 12, epoch: 2, stamped: 8 });
    g.buckets = 12;
    await g.until(() => g.balanced(["a", "b"]), settleMs + 20 * leaseMs);
    expect(g.loads(["a", "b"])).toEqual([6, 6]);
    const config = await g.store.get(configName("g"));
    expect(decodeConfig(config!.record)).toEqual({ buckets: 12, epoch: 2, previous: 8 });
    const after = g.assignments.filter((a) => a.at >= changedAt);
    expect(after.every((a) => a.buckets === 12)).toBe(true);
    expect(g.revocations.filter((r) => r.at >= changedAt).every((r) => r.reason === "resharded")).toBe(true);
    expect(keyOverlaps(g)).toEqual([]);
    expect(g.violations).toEqual([]);
  });

  it("shrinks 12 -> 4: buckets 4..11 end free, stay free, and no key is worked on twice", async () => {
    const g = await balancedPair(12);
    await reshard({ store: g.store, group: "g", buckets: 4, clock: g.clock });
    g.buckets = 4;
    await g.until(() => g.balanced(["a", "b"]), settleMs + 20 * leaseMs);
    await g.clock.advance(5 * leaseMs);
    expect(g.balanced(["a", "b"])).toBe(true);
    for (let i = 4; i < 12; i++) {
      const stored = await g.store.get(bucketName("g", i));
      const info = decodeBucket("g", stored!);
      expect(info).toMatchObject({ holder: null, epoch: 2 });
    }
    for (const [, m] of g.members) expect(m.elector.current.held.every((h) => h.bucket < 4)).toBe(true);
    expect(keyOverlaps(g)).toEqual([]);
    expect(g.violations).toEqual([]);
  });

  it("a member started with another count follows the group's config record", async () => {
    const g = await balancedPair(6);
    g.join("c", { buckets: 40 });
    await g.until(() => g.balanced(["a", "b", "c"]), settleMs + 10 * leaseMs);
    expect(g.loads(["a", "b", "c"])).toEqual([2, 2, 2]);
    expect(g.members.get("c")!.elector.current.buckets).toBe(6);
  });

  it("the same count again changes nothing; a missing group is created; bad input changes nothing", async () => {
    const store = new MemoryStore();
    expect(await reshard({ store, group: "jobs", buckets: 3 })).toEqual({ from: 0, to: 3, epoch: 1, stamped: 0 });
    expect(await reshard({ store, group: "jobs", buckets: 3 })).toEqual({ from: 3, to: 3, epoch: 1, stamped: 0 });
    await expect(reshard({ store, group: "jobs", buckets: 0 })).rejects.toThrow(LeaseValidationError);
    await expect(reshard({ store, group: "Jobs!", buckets: 2 })).rejects.toThrow(/group/);
    const config = await store.get(configName("jobs"));
    expect(decodeConfig(config!.record)).toEqual({ buckets: 3, epoch: 1, previous: 0 });
  });

  it("a step interrupted before stamping is finished by the members: missing records below the old count are created", async () => {
    const g = await balancedPair(4);
    // As if reshard had written the config and crashed: no record stamped.
    const current = await g.store.get(configName("g"));
    await g.store.put(
      { ...current!.record, metadata: { buckets: "6", epoch: "2", previous: "8" }, writeId: "interrupted" },
      current!.revision,
    );
    g.buckets = 6;
    await g.until(() => g.balanced(["a", "b"]), settleMs + 20 * leaseMs);
    for (let i = 0; i < 8; i++) {
      const info = decodeBucket("g", (await g.store.get(bucketName("g", i)))!);
      expect(info?.epoch).toBe(2);
      if (i >= 6) expect(info?.holder).toBeNull();
    }
    expect(keyOverlaps(g)).toEqual([]);
    expect(g.violations).toEqual([]);
  });
});
