/**
 * Every kind of problem the API answers (RFC 9457 problem details, type
 * `urn:leasehold:problem:<kind>`), with its status and title: the one table. The server writes
 * every problem body from it (src/api/problems.ts: routes, the Node listener's own refusals, the
 * Worker's configuration error), and the wire schema exports its names (`ProblemKind`, which the
 * Go module's wire layer is generated from). Runtime-neutral.
 */
export const PROBLEM_KINDS = {
  validation: [400, "Invalid request"],
  "bad-request": [400, "Malformed HTTP request"],
  unauthorized: [401, "Missing or unknown bearer token"],
  forbidden: [403, "Token not allowed here"],
  "host-not-allowed": [403, "Host not served without tokens"],
  "not-found": [404, "Not found"],
  "method-not-allowed": [405, "Method not allowed"],
  "request-timeout": [408, "Request too slow"],
  conflict: [409, "Lease held by someone else"],
  "holder-in-use": [409, "Holder name in use by another process"],
  "group-record": [409, "Record of a sharded group"],
  "protocol-record": [409, "Process session record, not a lease"],
  "not-a-group": [409, "Group name taken by another record"],
  "term-exhausted": [409, "No term left for this lease"],
  "term-rule": [409, "Write breaks a lease invariant"],
  "protocol-field": [409, "Protocol field not the writer's to set"],
  "session-ended": [409, "Member session has ended"],
  "member-in-use": [409, "Member id in use by another process"],
  "bucket-not-held": [409, "Bucket not held at that term"],
  "not-corrupt": [409, "Record is readable"],
  "group-full": [409, "Group has its most members"],
  "precondition-failed": [412, "Revision is not current"],
  "payload-too-large": [413, "Request body too large"],
  "unsupported-media-type": [415, "Expected application/json"],
  "precondition-required": [428, "If-Match or If-None-Match required"],
  "over-limit": [429, "Over a bound of this server"],
  "headers-too-large": [431, "Request headers too large"],
  corrupt: [500, "Stored record is unreadable"],
  internal: [500, "Internal error"],
  configuration: [500, "Server misconfigured"],
  "streaming-unavailable": [501, "Streams not served by this deployment"],
  "over-capacity": [503, "Server at a bound of its capacity"],
  "store-unavailable": [503, "Store unavailable or outcome unknown"],
} as const satisfies Record<string, readonly [number, string]>;

export type ProblemKind = keyof typeof PROBLEM_KINDS;

/** The kinds' names, in the table's order. */
export const PROBLEM_KIND_NAMES = Object.keys(PROBLEM_KINDS) as [ProblemKind, ...ProblemKind[]];

/** A kind's problem type, as the body's `type` carries it. */
export const problemType = (kind: ProblemKind): string => `urn:leasehold:problem:${kind}`;
