/**
 * `leasehold/http`: the client side of the HTTP API. `LeaseholdClient` (typed calls, safe
 * retries, watch with resume), the wire schemas both sides validate with, and the SSE reader.
 * The `LeaseStore` over the API is `leasehold/stores/http`; the server is `leasehold/api`.
 * Runtime-neutral (fetch only).
 */
export { isLeaseholdApiError, LeaseholdApiError } from "./api-error.js";
export { type ClientOptions, LeaseholdClient } from "./client.js";
export {
  AcquireBody,
  AskedHandoff,
  HandoffBody,
  type HandoffConfirmation,
  HandoffResult,
  type HandoffResultView,
  Heartbeat,
  HeartbeatBody,
  type HeartbeatRequest,
  type HeartbeatView,
  HeldBucket,
  Lease,
  LeaseList,
  type LeaseListView,
  LeaseResult,
  type LeaseResultView,
  type LeaseView,
  LeaveBody,
  type LeaveRequest,
  MemberLeft,
  type MemberLeftView,
  Problem,
  ProblemKind,
  type ProblemView,
  RecordBody,
  type RecordWrite,
  TermBody,
  WatchEvent,
  type WatchEventView,
} from "./schemas.js";
export { readSse, type SseMessage } from "./sse.js";
