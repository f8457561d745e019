/** What `leasehold status --group` reports, from plain records: every member and bucket state. */
import { describe, expect, it } from "vitest";
import type { LeaseRecord, Stored } from "../../src/lease.js";
import { groupStatus } from "../../src/sharding/group-status.js";
import { bucketMetadata, bucketName, configRecord, memberName } from "../../src/sharding/layout.js";

const group = "adapters/billing";
const NOW = Date.UTC(2026, 11, 2);
let rev = 0;
const stored = (record: LeaseRecord): Stored => ({ record, revision: String(++rev) });

function member(id: string, o: { session: number; live?: boolean; left?: boolean; fencedBy?: string }): Stored {
  const renewedAt = o.live === false ? NOW - 20_000 : NOW - 1000;
  return stored({
    name: memberName(group, id),
    holder: o.left || o.fencedBy ? null : id,
    term: o.session,
    leaseMs: 10_000,
    acquiredAt: NOW - 60_000,
    renewedAt,
    metadata: o.fencedBy ? { fenced: o.fencedBy } : {},
    writeId: `w${rev}`,
  });
}

function bucket(index: number, holder: string | null, term: number, session = 1, held = 1): Stored {
  return stored({
    name: bucketName(group, index),
    holder,
    term,
    leaseMs: 10_000,
    acquiredAt: NOW,
    renewedAt: NOW,
    metadata: bucketMetadata(holder === null ? null : { session, held }, Math.max(held, 1)),
    writeId: `w${rev}`,
  });
}

describe("groupStatus", () => {
  it("no config record: undefined", () => {
    expect(groupStatus(group, [member("a", { session: 1 })], NOW)).toBeUndefined();
  });

  it("names every bucket state and member state, and the target over the live members", () => {
    const records = [
      stored(configRecord(group, { buckets: 6, epoch: 1, previous: 0 }, 10_000, NOW)),
      member("a", { session: 2 }),
      member("b", { session: 1, live: false }),
      member("c", { session: 3, fencedBy: "a" }),
      member("d", { session: 1, left: true }),
      bucket(0, "a", 4, 2),
      bucket(1, "a", 2, 1), // a's previous session: over
      bucket(2, "b", 5), // b expired, not fenced yet
      bucket(3, "c", 7, 3), // c fenced
      bucket(4, null, 3),
      // 5: no record
      bucket(9, "d", 2), // beyond the count, d's session over
    ];
    const status = groupStatus(group, records, NOW)!;
    expect(status.members.map((m) => [m.id, m.session, m.state, m.held, m.target, m.fencedBy])).toEqual([
      ["a", 2, "live", 1, 6, null],
      ["b", 1, "expired", 0, 0, null],
      ["c", 3, "fenced", 0, 0, "a"],
      ["d", 1, "left", 0, 0, null],
    ]);
    expect(status.buckets.map((b) => [b.bucket, b.owner, b.term, b.state, b.target])).toEqual([
      [0, "a", 4, "held", "a"],
      [1, "a", 2, "session-over", "a"],
      [2, "b", 5, "owner-expired", "a"],
      [3, "c", 7, "session-over", "a"],
      [4, null, 3, "free", "a"],
      [5, null, 0, "free", "a"],
      [9, "d", 2, "session-over", null],
    ]);
    expect(status.unowned).toBe(5);
    expect(status.balanced).toBe(false);
  });

  it("held under an older count is old-count; balanced means owned once each and loads within floor/ceil", () => {
    const config = stored(configRecord(group, { buckets: 3, epoch: 2, previous: 2 }, 10_000, NOW));
    const a = member("a", { session: 1 });
    const b = member("b", { session: 1 });
    const old = groupStatus(group, [config, a, b, bucket(0, "a", 1, 1, 1)], NOW)!;
    expect(old.buckets[0]).toMatchObject({ state: "old-count", owner: "a" });
    const even = groupStatus(
      group,
      [config, a, b, bucket(0, "a", 2, 1, 2), bucket(1, "b", 2, 1, 2), bucket(2, "b", 2, 1, 2)],
      NOW,
    )!;
    expect(even).toMatchObject({ unowned: 0, balanced: true });
    const lopsided = groupStatus(
      group,
      [config, a, b, bucket(0, "a", 2, 1, 2), bucket(1, "a", 2, 1, 2), bucket(2, "a", 2, 1, 2)],
      NOW,
    )!;
    expect(lopsided).toMatchObject({ unowned: 0, balanced: false });
  });
});
