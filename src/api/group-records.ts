/**
 * Group records belong to their group (docs/design.md §8, docs/security.md): the plain lease
 * routes refuse to write a record of a sharded group, and report a bucket's real state.
 *
 * A record is a group's by its name and its group's config, not by anything a caller could write
 * into it: `<group>/config` is a group's once it holds a config (no holder, term 0, a readable
 * bucket count and epoch; no plain route can write one: acquire and the PUT write a holder from
 * term 1, and a create may not be free at term 0 through them, see LeaseService), and
 * `<group>/members/<id>` and `<group>/buckets/<i>` are once `<group>/config` is. So a write to a
 * member or bucket name costs one more read (the config), and nothing else does.
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
import { ProblemError } from "./problems.js";

export type GroupRecordKind = "config" | "member" | "bucket";

/** The group and kind a name has by its shape (`<group>/config`, `/members/<id>`, `/buckets/<i>`), if any. */
export function groupShape(name: string): { group: string; kind: GroupRecordKind } | undefined {
  const match = /^(.+)\/(config|members\/[^/]+|buckets\/[^/]+)$/.exec(name);
  const group = match?.[1];
  if (!group || group.length > MAX_GROUP_LENGTH || !NAME_PATTERN.test(group)) return undefined;
  if (match[2] === "config") return { group, kind: "config" };
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
    private readonly isFree: (record: LeaseRecord) => boolean,
  ) {}

  /**
   * Throws 409 `group-record` when `name` (currently `current`) is a record of a sharded group:
   * a plain route must not write it. Reads `<group>/config` for a member or bucket name.
   */
  async refusePlainWrite(name: string, current: Stored | null): Promise<void> {
    // A new record under a member's or a bucket's (`<group>/members/m1/x`): a member-scoped token
    // could otherwise fill the listing every heartbeat of the group reads. One read per such shape.
    if (current === null) {
      for (const above of groupRecordsAbove(name)) {
        if (!isGroupConfig((await this.read(configName(above.group)))?.record)) continue;
        throw new ProblemError(
          "group-record",
          `"${name}" would lie under "${above.record}", the ${above.kind} record of the sharded group "${above.group}": no plain lease is created under a group's records`,
          { group: above.group },
        );
      }
    }
    const shape = groupShape(name);
    if (!shape) return;
    const config = shape.kind === "config" ? current : await this.read(configName(shape.group));
    if (!isGroupConfig(config?.record)) return;
    const route = `/v1/groups/${encodeURIComponent(shape.group)}/members/{member}`;
    throw new ProblemError(
      "group-record",
      `"${name}" is the ${shape.kind} record of the sharded group "${shape.group}": only its group routes write it (POST ${route}/heartbeat, /handoff, /leave)`,
      { group: shape.group },
    );
  }

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
    const own = stored.record.renewedAt + stored.record.leaseMs;
    if (!bucket || bucket.holder === null) return { expiresAt: own, free: true };
    const session = (await cached(memberName(shape.group, bucket.holder)))?.record;
    if (session && session.holder === bucket.holder && session.term === bucket.session) {
      return { expiresAt: session.renewedAt + session.leaseMs, free: this.isFree(session) };
    }
    // The session that held it is over (left, fenced, replaced) or never was: free since then.
    return { expiresAt: Math.min(own, session ? session.renewedAt : own), free: true };
  }
}
