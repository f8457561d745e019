/**
 * RFC 9457 problem details, the one way the server says what went wrong: a `ProblemError` of a
 * kind from the one table (src/http/problem-kinds.ts), so status, type and title never drift
 * apart, written as an answer by `problemAnswer` alone, wherever it is answered (a route, the Node
 * listener's raw socket, the Worker's configuration error). Runtime-neutral.
 */
import { type FieldIssue, isLeaseValidationError } from "../errors.js";
import { PROBLEM_KINDS, type ProblemKind, problemType } from "../http/problem-kinds.js";
import type { LeaseView, ProblemView } from "../http/schemas.js";

export const PROBLEM_TYPE = "application/problem+json";

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
    this.status = PROBLEM_KINDS[kind][0];
  }

  toBody(): ProblemView {
    const [status, title] = PROBLEM_KINDS[this.kind];
    const body: ProblemView = { type: problemType(this.kind), title, status, detail: this.detail };
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

/** Whatever a route threw, as the problem to answer: never a backend's message or a stack. */
export function toProblem(error: unknown): ProblemError {
  if (error instanceof ProblemError) return error;
  if (isLeaseValidationError(error)) return new ProblemError("validation", error.message, { errors: error.issues });
  const e = error as { message?: string; status?: number };
  // Hono's own HTTPException (e.g. a body that is not JSON) carries a 4xx status.
  if (e.status === 400 || error instanceof SyntaxError) {
    return new ProblemError("validation", "the body is not valid JSON", {
      errors: [{ path: "", message: "expected a JSON object" }],
    });
  }
  if (e.status === 405) return new ProblemError("method-not-allowed", e.message ?? "method not allowed");
  return new ProblemError("internal", "unexpected server error");
}

/** A problem as an HTTP answer: the only place a problem body and its headers are written. */
export function problemAnswer(p: ProblemError): { status: number; headers: Record<string, string>; body: string } {
  return { status: p.status, headers: problemHeaders(p), body: JSON.stringify(p.toBody()) };
}

/** The headers of a problem answer: its type, and Retry-After, Allow, WWW-Authenticate where they apply. */
function problemHeaders(p: ProblemError): Record<string, string> {
  const headers: Record<string, string> = { "Content-Type": PROBLEM_TYPE };
  if (p.extra.retryAfter !== undefined) headers["Retry-After"] = String(p.extra.retryAfter);
  if (p.extra.allow !== undefined) headers.Allow = p.extra.allow;
  if (p.status === 401) headers["WWW-Authenticate"] = 'Bearer realm="leasehold"';
  return headers;
}
