/**
 * The options of `createApp` (src/api/app.ts), as a library caller passes them. Their numeric
 * bounds and defaults live in ./options.ts, which checks them; the server's variables
 * (src/api/config/policy.ts) are read against the same bounds.
 */
import type { Clock } from "../clock.js";
import type { LeaseStore } from "../lease.js";
import type { AuthConfig } from "./auth.js";
import type { ConsoleOptions } from "./console/index.js";
import type { StreamSupport } from "./context.js";
import type { ApiLogger } from "./log.js";

export interface ApiLimits {
  /** Largest accepted request body. Default 4096 bytes. */
  bodyBytes?: number;
  /** Largest page of a listing. Default 1000. */
  listLimit?: number;
  /** Open watch streams of this instance (the console's streams included). Default 1000; over it 503. */
  watchStreams?: number;
  /** Open watch streams of one token (of everyone without tokens), the console's included. Default 100; over it 429. */
  watchStreamsPerToken?: number;
  /** Records one token may create under one of its prefixes (a count kept in the store). Default 10000; over it 429. */
  recordsPerPrefix?: number;
  /** New records one token may create per minute. Default 600; over it 429. */
  createsPerMinute?: number;
  /** Bucket records one group heartbeat writes at most (the rest at the next). Default 64. */
  bucketWritesPerHeartbeat?: number;
}

export interface AppOptions {
  store: LeaseStore;
  /** Bearer tokens, or `{ insecureNoAuth: true }` for local use only. */
  auth: AuthConfig;
  clock?: Clock;
  limits?: ApiLimits;
  /**
   * Bound on wall-clock difference between any two API instances (and the store's writers).
   * A lease is free once `renewedAt + leaseMs + maxSkewMs` has passed here. Default 1000 ms.
   */
  maxSkewMs?: number;
  /**
   * While a lease is watched, how often this instance re-reads it to see other instances' writes
   * (one read per watched lease per interval, shared by all its streams). Default 1000 ms.
   */
  watchPollMs?: number;
  /** SSE keep-alive comment interval. Default 15000 ms. */
  heartbeatMs?: number;
  /**
   * Deadline of each store call (src/api/store-deadline.ts): past it the call is abandoned and the
   * request answered 503 with Retry-After, never held until the store answers. Keep it under the
   * clients' call timeouts. Default 2000 ms.
   */
  storeTimeoutMs?: number;
  /**
   * How this runtime carries streams (the watch route's Server-Sent Events). Default: a stream
   * lasts until its client leaves.
   * - `{ unavailable: detail }`: responses are buffered (the Lambda `handler` export), so a stream
   *   would reach its client only when the invocation ends: the watch route answers 501
   *   `streaming-unavailable` with `detail` (how to enable streaming) instead.
   * - `{ timeLeft }`: the runtime stops each request at a deadline (a Lambda invocation's
   *   timeout). `timeLeft(c)` is how long a stream may still run (ms); the stream then sends an
   *   `end` event and closes, and the client resumes at once with Last-Event-ID, missing nothing.
   */
  streams?: StreamSupport;
  /**
   * "loopback": serve only requests whose Host is localhost, 127.x.x.x or [::1] (403 otherwise), so
   * a browser cannot reach a server without tokens through DNS rebinding. The Node entries set it
   * when they serve on loopback without tokens.
   */
  allowedHosts?: "loopback";
  /**
   * The operational log: requests answered 5xx, store failures, holder changes this server wrote
   * (src/api/log.ts). Default: none; the runtimes pass one (LEASEHOLD_LOG picks its format).
   */
  log?: ApiLogger;
  /** The console at /ui and the change log behind it (src/api/console/, docs/console.md). */
  console?: ConsoleOptions;
  /**
   * Renewals first (src/api/admission.ts): at most `inFlight` requests at once (default 512), of
   * which `reservedInFlight` (default a quarter) only for current holders' renewals, releases and
   * member heartbeats; while `lateness()` (ms, e.g. a LatenessProbe's `now`) exceeds `lateMs`
   * (default 1000) only those are served. Everything else is answered 503 `over-capacity` with
   * Retry-After. Default: off, every request admitted (on Lambda and Workers these per-instance
   * bounds mean nothing); the Node entries turn it on.
   */
  admission?: AdmissionOptions;
}

export interface AdmissionOptions {
  inFlight?: number;
  reservedInFlight?: number;
  lateMs?: number;
  /** How late the event loop is now, in ms. Default: never late (only the in-flight bounds apply). */
  lateness?: () => number;
}
