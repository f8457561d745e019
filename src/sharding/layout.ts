/**
 * The records of a sharded group and what their metadata means (docs/sharding.md, "Records").
 * Every record is an ordinary lease record (docs/design.md §1), so every store, `leasehold status` and
 * the API's term rules apply to it unchanged. The bucket count is in no name: changing it renames
 * nothing and leaves no record behind.
 *
 * They live under the group's protocol segments (`_config`, `_members`, `_buckets`), which no lease
 * name can contain, so no plain lease and no other group's record lands on one (docs/design.md §1
 * "Protocol records").
 *
 * - `<group>/_config`: holder null, term 0 forever; metadata `buckets` (the count), `epoch` (+1 per
 *   change of the count) and `previous` (the count before that change).
 * - `<group>/_members/<id>`: one member's session. holder = the member id while a session runs,
 *   null once it ended (released on leave, or fenced by another member after it expired);
 *   term = the session's number (+1 per new session). metadata `wants` lists the buckets this
 *   member asks their owners to hand over; `fenced` names who ended an expired session;
 *   `holderDigest` is the digest of the instance of a member that heartbeats over HTTP
 *   (src/api/shard-service.ts, src/api/instance.ts).
 * - `<group>/_buckets/<index>`: one bucket. holder = the owning member id (null: free);
 *   term = the bucket's fencing token (+1 on every change of owner or session); metadata
 *   `session` = the owner's session term the bucket is held under, `held` = the config epoch the
 *   holding began in, `epoch` = the newest config epoch stamped on the record.
 *
 * Pure and runtime-neutral: the HTTP API's sharding routes read and write the same records.
 */
import { LeaseValidationError } from "../errors.js";
import { type LeaseRecord, MAX_NAME_LENGTH, NAME_PATTERN, newWriteId, type Stored } from "../lease.js";
import { MAX_BUCKETS, validateBucketCount } from "./bucket-of.js";

/** Member ids: one path segment, so a member record's name is `<group>/_members/<id>`. */
export const MEMBER_ID_PATTERN = /^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$/;

const LONGEST_SUFFIX = Math.max(`/_buckets/${MAX_BUCKETS - 1}`.length, "/_members/".length + 64, "/_config".length);
/** The longest group name that leaves room for every record name of the group. */
export const MAX_GROUP_LENGTH = MAX_NAME_LENGTH - LONGEST_SUFFIX;

export function validateGroup(group: unknown, path = "group"): string {
  if (typeof group !== "string" || !NAME_PATTERN.test(group) || group.length > MAX_GROUP_LENGTH) {
    throw new LeaseValidationError("sharded group", [
      {
        path,
        message: `expected 1-${MAX_GROUP_LENGTH} characters of a-z 0-9 . _ / -, starting and ending with a letter or digit`,
      },
    ]);
  }
  return group;
}

export function validateMemberId(id: unknown, path = "identity"): string {
  if (typeof id !== "string" || !MEMBER_ID_PATTERN.test(id)) {
    throw new LeaseValidationError("member identity", [
      {
        path,
        message:
          "expected 1-64 characters of a-z 0-9 . _ -, starting and ending with a letter or digit (it names the member record)",
      },
    ]);
  }
  return id;
}

export const configName = (group: string) => `${group}/_config`;
export const membersPrefix = (group: string) => `${group}/_members/`;
export const memberName = (group: string, id: string) => `${membersPrefix(group)}${id}`;
export const bucketsPrefix = (group: string) => `${group}/_buckets/`;
/**
 * Where leasehold 0.1.0 kept a group's config (`<group>/config`, beside `members/` and `buckets/`):
 * read only to refuse such a group with how to migrate it (`leasehold migrate-group`).
 */
export const legacyConfigName = (group: string) => `${group}/config`;
export const bucketName = (group: string, index: number) => `${bucketsPrefix(group)}${index}`;

/** The index in a bucket record's name, or `undefined` for a name that is not one. */
export function bucketIndexOf(group: string, name: string): number | undefined {
  const prefix = bucketsPrefix(group);
  if (!name.startsWith(prefix)) return undefined;
  const rest = name.slice(prefix.length);
  if (!/^(0|[1-9][0-9]{0,4})$/.test(rest)) return undefined;
  const index = Number(rest);
  return index < MAX_BUCKETS ? index : undefined;
}

/** The member id in a member record's name, or `undefined`. */
export function memberIdOf(group: string, name: string): string | undefined {
  const prefix = membersPrefix(group);
  if (!name.startsWith(prefix)) return undefined;
  const id = name.slice(prefix.length);
  return MEMBER_ID_PATTERN.test(id) ? id : undefined;
}

// ---- metadata ----

function wholeNumber(value: string | undefined): number | undefined {
  if (value === undefined || !/^(0|[1-9][0-9]{0,14})$/.test(value)) return undefined;
  return Number(value);
}

export interface GroupConfig {
  buckets: number;
  /** +1 each time the count changes; 1 for a new group. */
  epoch: number;
  /** The count before the last change (0 for a new group): records below it must exist. */
  previous: number;
}

export function decodeConfig(record: LeaseRecord): GroupConfig | undefined {
  const buckets = wholeNumber(record.metadata.buckets);
  const epoch = wholeNumber(record.metadata.epoch);
  const previous = wholeNumber(record.metadata.previous ?? "0");
  if (buckets === undefined || buckets < 1 || buckets > MAX_BUCKETS) return undefined;
  if (epoch === undefined || epoch < 1 || previous === undefined || previous > MAX_BUCKETS) return undefined;
  return { buckets, epoch, previous };
}

/**
 * Why `group` cannot start under 0.2.0's names, or `undefined`: `legacy` (what `legacyConfigName`
 * holds) is the config of a group leasehold 0.1.0 made, whose records the members of this version
 * never see. Starting afresh beside it would hand its buckets out again at lower terms.
 */
export function legacyGroupRefusal(group: string, legacy: LeaseRecord | undefined): string | undefined {
  if (!legacy || legacy.holder !== null || legacy.term !== 0 || decodeConfig(legacy) === undefined) return undefined;
  return `group "${group}" was made by leasehold 0.1.0 (its records are ${legacyConfigName(group)}, ${group}/members/*, ${group}/buckets/*): stop every member of it, then run \`leasehold migrate-group ${group} --store <url>\`, which carries each bucket's term over to the records this version uses (${configName(group)}, ${membersPrefix(group)}*, ${bucketsPrefix(group)}*)`;
}

export function configRecord(group: string, config: GroupConfig, leaseMs: number, wallNow: number): LeaseRecord {
  validateBucketCount(config.buckets);
  return {
    name: configName(group),
    holder: null,
    term: 0,
    leaseMs,
    acquiredAt: wallNow,
    renewedAt: wallNow,
    metadata: { buckets: String(config.buckets), epoch: String(config.epoch), previous: String(config.previous) },
    writeId: newWriteId(),
  };
}

export interface MemberInfo {
  id: string;
  stored: Stored;
  /** null once the session ended (left or fenced). */
  holder: string | null;
  /** The session term (the newest one when the session has ended). */
  term: number;
  leaseMs: number;
  /** Buckets this member asks their owners to hand over. */
  wants: number[];
  /** Who fenced the session, when it ended that way. */
  fencedBy: string | undefined;
}

export function decodeMember(group: string, stored: Stored): MemberInfo | undefined {
  const id = memberIdOf(group, stored.record.name);
  if (id === undefined) return undefined;
  const r = stored.record;
  const wants = (r.metadata.wants ?? "")
    .split(",")
    .map((w) => wholeNumber(w))
    .filter((w): w is number => w !== undefined && w < MAX_BUCKETS);
  return { id, stored, holder: r.holder, term: r.term, leaseMs: r.leaseMs, wants, fencedBy: r.metadata.fenced };
}

/**
 * The most buckets a member asks for at once. Its `wants` list rides in the member record's
 * metadata (1 KiB with the other fields): 128 indexes below 4096 take at most 640 bytes.
 */
export const MAX_WANTS = 128;

export function memberMetadata(wants: readonly number[]): Record<string, string> {
  return wants.length === 0 ? {} : { wants: [...wants].sort((a, b) => a - b).join(",") };
}

export interface BucketInfo {
  index: number;
  stored: Stored;
  holder: string | null;
  term: number;
  /** The owner's session term (holder set); `undefined` when the record does not say (corrupt). */
  session: number | undefined;
  /** The config epoch the holding began in. */
  held: number;
  /** The newest config epoch stamped on the record. */
  epoch: number;
}

export function decodeBucket(group: string, stored: Stored): BucketInfo | undefined {
  const index = bucketIndexOf(group, stored.record.name);
  if (index === undefined) return undefined;
  const m = stored.record.metadata;
  const epoch = wholeNumber(m.epoch) ?? 0;
  return {
    index,
    stored,
    holder: stored.record.holder,
    term: stored.record.term,
    session: wholeNumber(m.session),
    held: wholeNumber(m.held) ?? 0,
    epoch,
  };
}

export function bucketMetadata(owner: { session: number; held: number } | null, epoch: number): Record<string, string> {
  const m: Record<string, string> = { epoch: String(epoch) };
  if (owner) {
    m.session = String(owner.session);
    m.held = String(owner.held);
  }
  return m;
}
