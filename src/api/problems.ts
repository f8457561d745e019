/** RFC 9457 problem details: one constructor per kind, so status, type and title never drift apart. */
import type { FieldIssue } from "../errors.js";
import type { LeaseView, ProblemView } from "../http/schemas.js";

export const PROBLEM_TYPE = "application/problem+json";

const kinds = {
  validation: [400, "Invalid request"],
  unauthorized: [401, "Missing or unknown bearer token"],
  forbidden: [403, "Token not allowed here"],
  "host-not-allowed": [403, "Host not served without tokens"],
  "not-found": [404, "Not found"],
  "method-not-allowed": [405, "Method not allowed"],
  conflict: [409, "Lease held by someone else"],
  "holder-in-use": [409, "Holder name in use by another process"],
  "group-record": [409, "Record of a sharded group"],
  "not-a-group": [409, "Group name taken by another record"],
  "term-exhausted": [409, "No term left for this lease"],
  "term-rule": [409, "Write breaks a lease invariant"],
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
  "over-capacity": [503, "Server at a bound of its capacity"],
  "streaming-unavailable": [501, "Streams not served by this deployment"],
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
      /** The bound a refused request is over (429, 503). */
      bound?: string;
      /** A lease still held (409 conflict): in how many ms this server will consider it free. */
      freeInMs?: number;
      /** The sharded group whose record a plain route refused to write (409 group-record). */
      group?: string;
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
    if (this.extra.bound !== undefined) body.bound = this.extra.bound;
    if (this.extra.group !== undefined) body.group = this.extra.group;
    if (this.extra.freeInMs !== undefined) body.freeInMs = this.extra.freeInMs;
    return body;
  }

  /** The same problem without the current record, for a caller that may not read it. */
  withoutLease(): ProblemError {
    const { lease: _lease, ...extra } = this.extra;
    return new ProblemError(this.kind, this.detail, extra);
  }
}

/** "term: expected ...; holder: expected ..." for a problem's detail (at most three fields). */
export function describeIssues(errors: FieldIssue[]): string {
  const shown = errors.slice(0, 3).map((e) => (e.path ? `${e.path}: ${e.message}` : e.message));
  return shown.join("; ") + (errors.length > 3 ? `; and ${errors.length - 3} more (see errors)` : "");
}

/** Whatever a route threw, as the problem to answer: never a backend's message or a stack. */
export function toProblem(error: unknown): ProblemError {
  if (error instanceof ProblemError) return error;
  const e = error as {
    name?: string;
    message?: string;
    issues?: Array<{ path: string; message: string }>;
    status?: number;
  };
  if (e.name === "LeaseValidationError") {
    return new ProblemError("validation", e.message ?? "invalid request", { errors: e.issues ?? [] });
  }
  // Hono's own HTTPException (e.g. a body that is not JSON) carries a 4xx status.
  if (e.status === 400 || error instanceof SyntaxError) {
    return new ProblemError("validation", "the body is not valid JSON", {
      errors: [{ path: "", message: "expected a JSON object" }],
    });
  }
  if (e.status === 405) return new ProblemError("method-not-allowed", e.message ?? "method not allowed");
  return new ProblemError("internal", "unexpected server error");
}

/** The headers of a problem answer: its type, and Retry-After, Allow, WWW-Authenticate where they apply. */
export function problemHeaders(p: ProblemError): Record<string, string> {
  const headers: Record<string, string> = { "Content-Type": PROBLEM_TYPE };
  if (p.extra.retryAfter !== undefined) headers["Retry-After"] = String(p.extra.retryAfter);
  if (p.extra.allow !== undefined) headers.Allow = p.extra.allow;
  if (p.status === 401) headers["WWW-Authenticate"] = 'Bearer realm="leasehold"';
  return headers;
}
