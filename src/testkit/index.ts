/**
 * `leasehold/testkit`: test a store or an application against leasehold's own contracts.
 * `describeStoreContract`, `describeElectorContract` and `describeShardedContract` are the suites every built-in backend
 * runs against its real server (they need vitest, an optional peer); `ManualClock` moves time
 * only when told, `StoreWrapper` wraps a store without hiding any capability, `FaultyStore`
 * injects hangs and lost responses, `TrackedStore` counts calls and lets real I/O settle.
 */
export { ManualClock, type ManualClockOptions } from "../clock.js";
export { describeElectorContract, type ElectorContractOptions } from "./elector-contract.js";
export { FaultyStore, type PutFault } from "./faulty-store.js";
export { check, SAFETY_CASES, type SafetyCase, type SafetyContext } from "./safety-cases.js";
export { describeShardedContract, type ShardedContractOptions } from "./sharded-contract.js";
export {
  casWrite,
  describeStoreContract,
  makeRecord,
  type StoreContractOptions,
  type StoreUnderTest,
  uniqueName,
} from "./store-contract.js";
export { type Capability, StoreWrapper } from "./store-wrapper.js";
export { type CallCounts, TrackedStore } from "./tracked-store.js";
