/**
 * What each sharding write puts in the store: the next record, built from the one it replaces.
 * Pure and runtime-neutral, so the sharded elector, `reshard` and the HTTP API's sharding routes
 * (src/api/shard-service.ts) write exactly the same records. Every one keeps the term rules the API enforces
 * (src/term-rules.ts): a new holder or session takes term + 1, a stamp keeps holder and term, a
 * release and a fence keep the term. The caller writes it by compare-and-swap on the revision of
 * the record it was built from.
 */
import { type LeaseRecord, newWriteId, releasedRecord } from "../lease.js";
import { type BucketInfo, bucketMetadata, bucketName, type MemberInfo } from "./layout.js";

/** Taking a bucket (free, or of a session that is over) for `holder`'s session `session`. */
export function claimRecord(
  group: string,
  index: number,
  current: BucketInfo | undefined,
  owner: { holder: string; session: number; epoch: number; leaseMs: number },
  wallNow: number,
): LeaseRecord {
  return {
    name: bucketName(group, index),
    holder: owner.holder,
    term: (current?.term ?? 0) + 1,
    leaseMs: owner.leaseMs,
    acquiredAt: wallNow,
    renewedAt: wallNow,
    metadata: bucketMetadata({ session: owner.session, held: owner.epoch }, Math.max(owner.epoch, current?.epoch ?? 0)),
    writeId: newWriteId(),
  };
}

/** An owner giving its bucket to `to`, whose session is `session`. */
export function transferRecord(
  current: BucketInfo,
  to: { holder: string; session: number; epoch: number },
  wallNow: number,
): LeaseRecord {
  return {
    ...current.stored.record,
    holder: to.holder,
    term: current.term + 1,
    acquiredAt: wallNow,
    renewedAt: wallNow,
    metadata: bucketMetadata({ session: to.session, held: to.epoch }, Math.max(to.epoch, current.epoch)),
    writeId: newWriteId(),
  };
}

/** A bucket made free (holder null), its term kept. */
export function releaseRecord(current: BucketInfo, epoch: number, wallNow: number): LeaseRecord {
  return releasedRecord(current.stored.record, wallNow, bucketMetadata(null, Math.max(epoch, current.epoch)));
}

/** A bucket record marked with a newer config epoch; holder, term and session kept. */
export function stampRecord(current: BucketInfo, epoch: number): LeaseRecord {
  return {
    ...current.stored.record,
    metadata: { ...current.stored.record.metadata, epoch: String(Math.max(epoch, current.epoch)) },
    writeId: newWriteId(),
  };
}

/** A missing bucket record, created free and stamped with `epoch`. */
export function freeBucketRecord(group: string, index: number, epoch: number, leaseMs: number, wallNow: number) {
  const record: LeaseRecord = {
    name: bucketName(group, index),
    holder: null,
    term: 0,
    leaseMs,
    acquiredAt: wallNow,
    renewedAt: wallNow,
    metadata: bucketMetadata(null, epoch),
    writeId: newWriteId(),
  };
  return record;
}

/** An expired member's session ended by `by` (holder null, term kept). */
export function fenceRecord(member: MemberInfo, by: string, wallNow: number): LeaseRecord {
  return releasedRecord(member.stored.record, wallNow, { fenced: by });
}
