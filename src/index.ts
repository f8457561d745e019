/**
 * leasehold: leader election on compare-and-swap leases. The main entry holds what a first
 * program needs: `runAsLeader` and `Elector` (and leases bound to one process session,
 * `openSession`), `openStore` and the in-process `MemoryStore`, the store contract's types, the
 * errors an application meets with their guards, and `ElectorMetrics`. test/public-surface.test.ts
 * pins every entry's names. Everything else has its own subpath, so a user loads only what they
 * use: each backend (`leasehold/stores/<name>`, which also exports the errors only that store
 * throws), sharded leadership (`leasehold/sharding`), the load lane (`leasehold/lane`), fencing
 * (`leasehold/fencing`), the HTTP client (`leasehold/http`), the HTTP server (`leasehold/api`),
 * helpers and errors for store authors (`leasehold/store-kit`) and the test kit with the contract
 * suites (`leasehold/testkit`).
 */

export { MemoryStore } from "./backends/memory/store.js";
export { BoundElector } from "./bound/bound-elector.js";
export { type BoundElectorOptions, LeaseSession, openSession, type SessionOptions } from "./bound/session.js";
export { type Clock, systemClock } from "./clock.js";
export {
  type FieldIssue,
  isAmbiguous,
  isLeadershipLostError,
  isLeaseholdError,
  isLeaseStoreError,
  isLeaseValidationError,
  isStoreContractError,
  isStoreUnavailableError,
  LeadershipLostError,
  LeaseholdError,
  LeaseStoreError,
  LeaseValidationError,
  type LossReason,
  StoreContractError,
  StoreUnavailableError,
} from "./errors.js";
export {
  type DeposedEvent,
  type ElectedEvent,
  Elector,
  type ElectorEvents,
  type ElectorOptions,
  type ElectorPhase,
  type ElectorState,
  type LeaderEvent,
} from "./leader/elector.js";
export {
  type LeaderContext,
  type LeaderElector,
  type RunAsLeaderOptions,
  runAsLeader,
  runLeader,
} from "./leader/run-as-leader.js";
export type { LeaseRecord, LeaseStore, Stored } from "./lease.js";
export { ElectorMetrics } from "./metrics/elector.js";
export { type OpenStoreOptions, openStore, parseStoreUrl, type StoreUrl } from "./open-store.js";
