/** RFC 9457 problem details: one constructor per kind, so status, type and title never drift apart. */
import type { FieldIssue } from "../errors.js";
import type { LeaseView, ProblemView } from "../http/schemas.js";

export const PROBLEM_TYPE = "application/problem+json";

const kinds = {
  validation: [400, "Invalid request"],
  unauthorized: [401, "Missing or unknown bearer token"],
  forbidden: [403, "Token not allowed here"],
  "not-found": [404, "Not found"],
  "method-not-allowed": [405, "Method not allowed"],
  conflict: [409, "Lease held by someone else"],
  "term-rule": [409, "Write breaks a lease invariant"],
  "session-ended": [409, "Member session has ended"],
  "member-in-use": [409, "Member id in use by another process"],
  "bucket-not-held": [409, "Bucket not held at that term"],
  "precondition-failed": [412, "Revision is not current"],
  "payload-too-large": [413, "Request body too large"],
  "unsupported-media-type": [415, "Expected application/json"],
  "precondition-required": [428, "If-Match or If-None-Match required"],
  "too-many-streams": [429, "Too many open streams"],
  corrupt: [500, "Stored record is unreadable"],
  "store-unavailable": [503, "Store unavailable or outcome unknown"],
  internal: [500, "Internal error"],
} as const;

export type ProblemKind = keyof typeof kinds;

export class ProblemError extends Error {
  readonly status: number;
  constructor(
    readonly kind: ProblemKind,
    readonly detail: string,
    readonly extra: {
      errors?: FieldIssue[];
      lease?: LeaseView;
      leader?: boolean;
      /** Which term rule a write broke (src/term-rules.ts). */
      rule?: string;
      retryAfter?: number;
      /** The methods the path supports (405). */
      allow?: string;
    } = {},
  ) {
    super(detail);
    this.status = kinds[kind][0];
  }

  toBody(): ProblemView {
    const [status, title] = kinds[this.kind];
    const body: ProblemView = { type: `urn:leasehold:problem:${this.kind}`, title, status, detail: this.detail };
    if (this.extra.errors) body.errors = this.extra.errors;
    if (this.extra.lease) body.lease = this.extra.lease;
    if (this.extra.leader !== undefined) body.leader = this.extra.leader;
    if (this.extra.rule !== undefined) body.rule = this.extra.rule;
    return body;
  }
}
