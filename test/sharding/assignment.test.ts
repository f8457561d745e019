/**
 * The target assignment (src/sharding/assignment.ts), as properties over random groups: perfect
 * balance, the same answer whatever the order members are listed in, a fixed point once reached,
 * and the fewest possible moves on a join or a leave.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { targetAssignment } from "../../src/sharding/assignment.js";

const memberIds = fc.uniqueArray(fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,11}$/), { minLength: 1, maxLength: 9 });
const bucketCount = fc.integer({ min: 1, max: 200 });

function loads(target: Array<string | undefined>, members: string[]): number[] {
  return members.map((m) => target.filter((t) => t === m).length);
}

const moved = (a: Array<string | undefined>, b: Array<string | undefined>) => a.filter((x, i) => x !== b[i]).length;

describe("targetAssignment", () => {
  it("gives every bucket to a member, each member floor(N/M) or ceil(N/M)", () => {
    fc.assert(
      fc.property(memberIds, bucketCount, (members, n) => {
        const target = targetAssignment({ members, buckets: n });
        expect(target.every((t) => t !== undefined && members.includes(t))).toBe(true);
        const l = loads(target, members);
        expect(Math.min(...l)).toBe(Math.floor(n / members.length));
        expect(Math.max(...l)).toBe(Math.ceil(n / members.length));
      }),
    );
  });

  it("does not depend on the order members are listed in, and is a fixed point once reached", () => {
    fc.assert(
      fc.property(memberIds, bucketCount, (members, n) => {
        const a = targetAssignment({ members, buckets: n });
        expect(targetAssignment({ members: [...members].reverse(), buckets: n })).toEqual(a);
        expect(targetAssignment({ members, buckets: n, owners: a })).toEqual(a);
      }),
    );
  });

  it("on a join moves only the joiner's share; on a leave only the leaver's buckets", () => {
    fc.assert(
      fc.property(memberIds, bucketCount, fc.nat(), (members, n, pick) => {
        const before = targetAssignment({ members, buckets: n });
        const joiner = "zz-new";
        const joined = targetAssignment({ members: [...members, joiner], buckets: n, owners: before });
        expect(moved(before, joined)).toBe(joined.filter((t) => t === joiner).length);
        if (members.length < 2) return;
        const leaver = members[pick % members.length]!;
        const rest = members.filter((m) => m !== leaver);
        const left = targetAssignment({
          members: rest,
          buckets: n,
          owners: before.map((o) => (o === leaver ? null : o)),
        });
        expect(moved(before, left)).toBe(before.filter((t) => t === leaver).length);
      }),
    );
  });

  it("ignores owners outside the view, and keeps an owner's highest-scoring buckets when it is over its quota", () => {
    const owners = new Array<string>(8).fill("a");
    const target = targetAssignment({ members: ["a", "b"], buckets: 8, owners });
    expect(loads(target, ["a", "b"])).toEqual([4, 4]);
    expect(targetAssignment({ members: ["b"], buckets: 3, owners: ["a", "a", "a"] })).toEqual(["b", "b", "b"]);
    expect(targetAssignment({ members: [], buckets: 2 })).toEqual([undefined, undefined]);
  });
});
