/**
 * Group records belong to their group (docs/design.md §8, docs/security.md): the plain lease
 * routes refuse to write a record of a sharded group, and report a bucket's real state.
 *
 * A record is a group's by its name alone: `<group>/_config`, `<group>/_members/<id>` and
 * `<group>/_buckets/<i>` are names no lease can have (docs/design.md §1 "Protocol records"), so no
 * plain route can write one (their names are refused before anything is read), and no lease can
 * alias one.
 *
 * A bucket record is never renewed (its owner's session carries it), so its own stamps say
 * nothing: it is held while the owner's session that holds it lives, and its view's `expiresAt`
 * is that session's. Runtime-neutral.
 */
import type { LeaseRecord, Stored } from "../lease.js";
import { NAME_PATTERN } from "../lease.js";
import {
  bucketIndexOf,
  configName,
  decodeBucket,
  decodeConfig,
  MAX_GROUP_LENGTH,
  memberIdOf,
  memberName,
} from "../sharding/layout.js";
import { heldUnder } from "../tenure.js";

export type GroupRecordKind = "config" | "member" | "bucket";

/** The group and kind a name has by its shape (`<group>/_config`, `/_members/<id>`, `/_buckets/<i>`), if any. */
export function groupShape(name: string): { group: string; kind: GroupRecordKind } | undefined {
  const match = /^(.+)\/(_config|_members\/[^/]+|_buckets\/[^/]+)$/.exec(name);
  const group = match?.[1];
  if (!group || group.length > MAX_GROUP_LENGTH || !NAME_PATTERN.test(group)) return undefined;
  if (match[2] === "_config") return { group, kind: "config" };
  if (memberIdOf(group, name) !== undefined) return { group, kind: "member" };
  if (bucketIndexOf(group, name) !== undefined) return { group, kind: "bucket" };
  return undefined;
}

/**
 * The member and bucket records `name` lies under (`<group>/members/<id>/...`), by shape: a plain
 * record there would be listed with the group's own at every heartbeat.
 */
export function groupRecordsAbove(name: string): Array<{ group: string; kind: GroupRecordKind; record: string }> {
  const segments = name.split("/");
  const out: Array<{ group: string; kind: GroupRecordKind; record: string }> = [];
  for (let k = 1; k < segments.length; k++) {
    const record = segments.slice(0, k).join("/");
    const shape = groupShape(record);
    if (shape && shape.kind !== "config") out.push({ ...shape, record });
  }
  return out;
}

/** A group's config record: free at term 0 with a readable count and epoch. */
export function isGroupConfig(record: LeaseRecord | undefined): boolean {
  return record !== undefined && record.holder === null && record.term === 0 && decodeConfig(record) !== undefined;
}

export interface BucketState {
  /** When the bucket stops being held: its owner's session's expiry, or when that session ended. */
  expiresAt: number;
  /** Free by the server's rule: no owner, or its session over or expired. */
  free: boolean;
}

type Read = (name: string) => Promise<Stored | null>;

export class GroupRecords {
  constructor(
    private readonly read: Read,
    /** The server's clock and skew bound: the stateless rule judges the owner's session (src/tenure.ts). */
    private readonly clock: { wallNow(): number },
    private readonly maxSkewMs: number,
  ) {}

  /**
   * A bucket's real state, when `stored` is a bucket of a group; `undefined` for any other record
   * (its own stamps tell). `cache` shares the config and member reads of one listing page.
   */
  async bucketState(
    stored: Stored,
    cache = new Map<string, Promise<Stored | null>>(),
  ): Promise<BucketState | undefined> {
    const shape = groupShape(stored.record.name);
    if (shape?.kind !== "bucket") return undefined;
    const cached = (name: string) => {
      let p = cache.get(name);
      if (!p) {
        p = this.read(name);
        cache.set(name, p);
      }
      return p;
    };
    if (!isGroupConfig((await cached(configName(shape.group)))?.record)) return undefined;
    const bucket = decodeBucket(shape.group, stored);
    if (!bucket || bucket.holder === null) {
      return { expiresAt: stored.record.renewedAt + stored.record.leaseMs, free: true };
    }
    const session = (await cached(memberName(shape.group, bucket.holder)))?.record;
    // An unreadable owner's session term (-1) is no tenure: free, as the session it named is unknown.
    const tenure = { holder: bucket.holder, term: bucket.session ?? -1 };
    return heldUnder(tenure, stored.record, session, this.clock.wallNow(), this.maxSkewMs);
  }
}
