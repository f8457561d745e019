/**
 * `leasehold/sharding`: sharded leadership (docs/sharding.md), all of it: the application names
 * the main entry also exports (`runSharded`, `ShardedElector`, `bucketOf`, `reshard`, metrics),
 * and the pure pieces an HTTP front end or another language's port builds on (the record layout,
 * the target assignment, the planner and the record builders).
 */

export { BucketLostError, type RevokeReason } from "../errors.js";
export { type AssignmentInput, quotas, rendezvousScore, targetAssignment } from "./assignment.js";
export { bucketOf, fnv1a64, jumpHash, MAX_BUCKETS } from "./bucket-of.js";
export {
  type BucketState,
  type BucketStatus,
  type GroupStatus,
  groupStatus,
  type MemberState,
  type MemberStatus,
} from "./group-status.js";
export {
  type BucketInfo,
  bucketName,
  bucketsPrefix,
  configName,
  decodeBucket,
  decodeConfig,
  decodeMember,
  type GroupConfig,
  type MemberInfo,
  memberName,
  membersPrefix,
} from "./layout.js";
export { ShardedElectorMetrics } from "./metrics.js";
export { type MigrateGroupOptions, type MigrateGroupResult, migrateGroup } from "./migrate.js";
export {
  claimRecord,
  fenceRecord,
  freeBucketRecord,
  releaseRecord,
  stampRecord,
  transferRecord,
} from "./next-records.js";
export { type Plan, type PlanInput, planShards } from "./plan.js";
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
