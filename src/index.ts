/**
 * leasehold: leader election on compare-and-swap leases. The main entry holds what an
 * application needs: `runAsLeader` and `Elector`, the errors and their guards, `openStore`, the
 * in-process `MemoryStore`, metrics, and the types. Everything else has its own subpath so a
 * user loads only what they use: each backend (`leasehold/stores/<name>`), the HTTP client
 * (`leasehold/http`), the HTTP server (`leasehold/api`), helpers for store authors
 * (`leasehold/store-kit`) and the test kit with the contract suites (`leasehold/testkit`).
 */

export { MemoryStore } from "./backends/memory/store.js";
export { BoundElector } from "./bound/bound-elector.js";
export { type BoundElectorOptions, LeaseSession, openSession, type SessionOptions } from "./bound/session.js";
export { type Clock, systemClock } from "./clock.js";
export {
  type Lane,
  type LaneKind,
  type LaneRelease,
  type LaneStats,
  LoadLane,
  type LoadLaneOptions,
  openLane,
  processLane,
} from "./elector/load-lane.js";
export {
  type LeaderContext,
  type LeaderElector,
  type RunAsLeaderOptions,
  runAsLeader,
  runLeader,
} from "./elector/run-as-leader.js";
export {
  type DeposedEvent,
  type ElectedEvent,
  Elector,
  type ElectorEvents,
  type ElectorOptions,
  type ElectorPhase,
  type ElectorState,
  type LeaderEvent,
} from "./elector.js";
export {
  BucketLostError,
  FenceCorruptError,
  type FieldIssue,
  isAmbiguous,
  isBucketLostError,
  isFenceCorruptError,
  isLeadershipLostError,
  isLeaseConflictError,
  isLeaseCorruptError,
  isLeaseholdError,
  isLeaseStillHeldError,
  isLeaseStoreError,
  isLeaseTermRuleError,
  isLeaseValidationError,
  isReleaseRefusedError,
  isStaleTermError,
  isStoreContractError,
  isStoreUnavailableError,
  LeadershipLostError,
  LeaseConflictError,
  LeaseCorruptError,
  LeaseholdError,
  LeaseStillHeldError,
  LeaseStoreError,
  LeaseTermRuleError,
  LeaseValidationError,
  type LossReason,
  ReleaseRefusedError,
  type RevokeReason,
  StaleTermError,
  StoreContractError,
  StoreUnavailableError,
} from "./errors.js";
export { isLeaseholdApiError, LeaseholdApiError } from "./http/api-error.js";
export type { CallOptions, LeaseRecord, LeaseStore, ListOptions, Revision, Stored } from "./lease.js";
export { ElectorMetrics } from "./metrics/elector.js";
export { type OpenStoreOptions, openStore, parseStoreUrl, type StoreUrl } from "./open-store.js";
export { bucketOf } from "./sharding/bucket-of.js";
export { ShardedElectorMetrics } from "./sharding/metrics.js";
export { type ReshardOptions, type ReshardResult, reshard } from "./sharding/reshard.js";
export { type BucketContext, type RunShardedOptions, runSharded } from "./sharding/run-sharded.js";
export {
  type AssignedEvent,
  type AssignedKind,
  type RevokedEvent,
  ShardedElector,
  type ShardedElectorEvents,
  type ShardedElectorOptions,
  type ShardedElectorState,
} from "./sharding/sharded-elector.js";
