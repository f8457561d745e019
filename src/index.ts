/**
 * leasehold: leader election on compare-and-swap leases. The core entry: records, errors, the
 * elector, the clock and the memory store. Each other backend has its own subpath export so a
 * user loads only the SDK they use.
 */

export { type Clock, ManualClock, type ManualClockOptions, systemClock } from "./clock.js";
export { type LeaderContext, type RunAsLeaderOptions, runAsLeader } from "./elector/run-as-leader.js";
export {
  type DeposedEvent,
  type ElectedEvent,
  Elector,
  type ElectorEvents,
  type ElectorOptions,
  type ElectorPhase,
  type ElectorState,
  type LeaderEvent,
  type LossReason,
} from "./elector.js";
export { ElectorMetrics } from "./elector-metrics.js";
export { LeadershipLostError } from "./errors.js";
export * from "./lease.js";
export { type OpenStoreOptions, openStore, parseStoreUrl, type StoreUrl } from "./open-store.js";
export * from "./sharding/index.js";
export { MemoryStore } from "./stores/memory.js";
