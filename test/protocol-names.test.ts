/**
 * No aliasing (docs/design.md §1 "Protocol records"): a group's, a member's, a bucket's and a
 * process session's record live where no lease name and no other group's record can land. Checked
 * over generated names: every protocol record's name has exactly the role it was built for, is no
 * lease name, and no two records built for different things share a name.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NAME_PATTERN, PROTOCOL_NAME_PATTERN, RECORD_NAME_PATTERN, recordRole } from "../src/lease.js";
import { MAX_BUCKETS } from "../src/sharding/bucket-of.js";
import { bucketName, configName, MAX_GROUP_LENGTH, memberName } from "../src/sharding/layout.js";

const segment = fc.stringMatching(/^[a-z0-9]([a-z0-9._-]{0,10}[a-z0-9])?$/);
/** Lease-name-shaped strings, including the segments 0.1.0's layout used (config, members, buckets). */
const leaseName = fc
  .array(fc.oneof(segment, fc.constantFrom("config", "members", "buckets", "sessions", "m1", "0")), {
    minLength: 1,
    maxLength: 5,
  })
  .map((s) => s.join("/"))
  .filter((n) => n.length <= MAX_GROUP_LENGTH);
const member = fc.oneof(
  segment.filter((s) => s.length <= 64),
  fc.constantFrom("config", "members", "buckets"),
);
const bucket = fc.integer({ min: 0, max: MAX_BUCKETS - 1 });

type Built = { what: string; name: string };
const built = fc.oneof(
  leaseName.map((g): Built => ({ what: `config of ${g}`, name: configName(g) })),
  fc.tuple(leaseName, member).map(([g, m]): Built => ({ what: `member ${m} of ${g}`, name: memberName(g, m) })),
  fc.tuple(leaseName, bucket).map(([g, b]): Built => ({ what: `bucket ${b} of ${g}`, name: bucketName(g, b) })),
  fc.tuple(fc.option(leaseName, { nil: undefined }), segment).map(
    ([scope, id]): Built => ({
      what: `session ${id} in ${scope}`,
      name: `${scope ? `${scope}/` : ""}_sessions/${id}`,
    }),
  ),
  leaseName.map((n): Built => ({ what: `lease ${n}`, name: n })),
);

const roleOf = (b: Built) => {
  if (b.what.startsWith("config")) return "group-config";
  if (b.what.startsWith("member")) return "member";
  if (b.what.startsWith("bucket")) return "bucket";
  if (b.what.startsWith("session")) return "session";
  return "lease";
};

describe("protocol record names", () => {
  it("each has the role it was built for, is a record name, and is a lease name only when it is a lease", () => {
    fc.assert(
      fc.property(built, (b) => {
        expect(recordRole(b.name), b.what).toBe(roleOf(b));
        expect(RECORD_NAME_PATTERN.test(b.name), b.what).toBe(true);
        expect(NAME_PATTERN.test(b.name), b.what).toBe(roleOf(b) === "lease");
        expect(PROTOCOL_NAME_PATTERN.test(b.name), b.what).toBe(roleOf(b) !== "lease");
      }),
      { numRuns: 2000 },
    );
  });

  it("two records built for different things never share a name", () => {
    fc.assert(
      fc.property(built, built, (a, b) => {
        if (a.what !== b.what) expect(a.name, `${a.what} and ${b.what}`).not.toBe(b.name);
      }),
      { numRuns: 5000 },
    );
  });
});
