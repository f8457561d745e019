/**
 * `leasehold/sharding`: sharded leadership (docs/sharding.md): `runSharded` and `ShardedElector`
 * with their events and options, `reshard`, `ShardedElectorMetrics`, the error a bucket's signal
 * aborts with (`BucketLostError`), `bucketOf` (the documented, language-neutral hash with test
 * vectors) and `groupStatus` (what `leasehold status --group --json` prints). The record layout,
 * the assignment, the planner and the record builders are the implementation, not the API.
 */

export { BucketLostError, isBucketLostError, type RevokeReason } from "../errors.js";
export { bucketOf, MAX_BUCKETS } from "./bucket-of.js";
export {
  type BucketState,
  type BucketStatus,
  type GroupStatus,
  groupStatus,
  type MemberState,
  type MemberStatus,
} from "./group-status.js";
export { ShardedElectorMetrics } from "./metrics.js";
export { type MigrateGroupOptions, type MigrateGroupResult, migrateGroup } from "./migrate.js";
export { type ReshardOptions, type ReshardResult, reshard } from "./reshard.js";
export { type BucketContext, type RunShardedOptions, runSharded } from "./run-sharded.js";
export {
  type AssignedEvent,
  type AssignedKind,
  type RevokedEvent,
  ShardedElector,
  type ShardedElectorEvents,
  type ShardedElectorOptions,
  type ShardedElectorState,
} from "./sharded-elector.js";
