/**
 * Every error leasehold throws on purpose, in one module, but one: the HTTP client's
 * `LeaseholdApiError` carries the API's problem body, whose type comes from the wire schemas, so
 * it lives beside them (src/http/api-error.ts) and this module imports nothing but the record's
 * types (src/record.ts): no import circle. Each class extends `LeaseholdError`, passes `cause`
 * through, and sets `name` as its discriminant; each has an `is…` guard that reads `name`, so it
 * works across bundles, realms and duplicated installs where `instanceof` does not. (The HTTP
 * server's internal `ProblemError` never leaves the server: it becomes a response.)
 * Runtime-neutral.
 */
import type { Revision, Stored } from "./record.js";

/** Base class: catch this to catch anything leasehold throws on purpose. */
export class LeaseholdError extends Error {
  override name = "LeaseholdError";
}

/**
 * Thrown by `LeaseStore.put` when the expected revision is not the current one
 * (or the record already exists for a create). `current` is the record that won, when the
 * backend returned it with the failure or the store could read it cheaply; `undefined` when
 * unknown, `null` when the lease does not exist. Whether the current record is in fact this
 * writer's own (an SDK retry of a write that applied) is decided by src/elector/cas.ts, not here.
 */
export class LeaseConflictError extends LeaseholdError {
  override name = "LeaseConflictError";
  constructor(
    readonly lease: string,
    readonly current: Stored | null | undefined,
    options?: { cause?: unknown },
  ) {
    super(`lease "${lease}" changed since it was read (compare-and-swap failed)`, options);
  }
}

/**
 * Thrown by a store when the backend failed. `ambiguous: true` means the write may or may not
 * have applied (timeout, connection reset, 5xx, throttling after send): callers must resolve it
 * by reading the record and comparing `writeId`, never by assuming either outcome.
 */
export class LeaseStoreError extends LeaseholdError {
  override name = "LeaseStoreError";
  readonly ambiguous: boolean;
  constructor(message: string, options: { ambiguous: boolean; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.ambiguous = options.ambiguous;
  }
}

/**
 * Thrown by the HTTP store when the API refuses a write by its holding rules (docs/security.md):
 * the lease is still held, by the server's clock (`renewedAt + leaseMs + maxSkewMs`), by another
 * holder or by this holder name from another process; or a term is continued by a process that
 * did not take it. Certainly not applied (`ambiguous: false`): the elector counts it a failed call
 * and tries again after `retryMs`, never at once. `retryAfterMs`: when the server expects the lease
 * to be free, when it said.
 */
export class LeaseStillHeldError extends LeaseStoreError {
  override name = "LeaseStillHeldError";
  constructor(
    readonly lease: string,
    message: string,
    readonly retryAfterMs: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, { ambiguous: false, ...options });
  }
}

/**
 * Thrown by a store whose backend cannot keep the store contract, so that no retry can help: an
 * S3-compatible server that ignores `If-None-Match`/`If-Match` or answers `501 Not Implemented` to
 * a conditional write. Nothing was written. The message names the endpoint and what failed. An
 * elector that meets it stops campaigning (its `error` event, then `runAsLeader` rejects with it).
 */
export class StoreContractError extends LeaseStoreError {
  override name = "StoreContractError";
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ambiguous: false, ...options });
  }
}

/** One failing field of a rejected input: a dotted path and what was expected. */
export interface FieldIssue {
  path: string;
  message: string;
}

/**
 * Issues in one line, "path: what was expected; path: ..." (an issue without a path: its message
 * alone): how every error message and problem detail lists them. With `max`, the first `max` and
 * "and N more (see errors)".
 */
export function describeIssues(issues: readonly FieldIssue[], max = Number.POSITIVE_INFINITY): string {
  const shown = issues.slice(0, max).map((i) => (i.path ? `${i.path}: ${i.message}` : i.message));
  return shown.join("; ") + (issues.length > max ? `; and ${issues.length - max} more (see errors)` : "");
}

/** Thrown when an option, a name, a holder or a record given to leasehold is invalid. Nothing was changed. */
export class LeaseValidationError extends LeaseholdError {
  override name = "LeaseValidationError";
  constructor(
    readonly what: string,
    readonly issues: FieldIssue[],
    options?: { cause?: unknown },
  ) {
    super(`invalid ${what}: ${describeIssues(issues)}`, options);
  }
}

/**
 * Thrown by the HTTP store when the API refused a write that would break one of the record's
 * invariants across revisions (a term that goes down or skips, a new holder without term + 1, a
 * release that changes the term): the API refuses such a write whatever the token allows
 * (src/term-rules.ts); `rule` names the one broken. Nothing was changed.
 */
export class LeaseTermRuleError extends LeaseValidationError {
  override name = "LeaseTermRuleError";
  constructor(
    readonly lease: string,
    /** The rule broken, e.g. "term-decreased" (src/term-rules.ts). */
    readonly rule: string,
    detail: string,
  ) {
    super("lease write", [{ path: "term", message: detail }]);
  }
}

/**
 * Thrown when a record read from the store is not a valid lease record (bad JSON, missing or
 * mistyped fields, foreign data). leasehold never overwrites such a record on its own: an operator
 * must look, and may clear it (`leasehold release --force`, docs/cli.md). `revision` is the
 * unreadable record's revision when the store could read one: a `put` expecting it replaces the
 * record, which only that operator's command does. A listing reports such a record in its place
 * (`Unreadable`, src/listing.ts) and carries on.
 */
export class LeaseCorruptError extends LeaseholdError {
  override name = "LeaseCorruptError";
  readonly revision: Revision | undefined;
  constructor(
    readonly lease: string,
    readonly issues: FieldIssue[],
    options?: { cause?: unknown; revision?: Revision | undefined },
  ) {
    super(
      `lease "${lease}" holds a record leasehold cannot read (refusing to overwrite it): ${describeIssues(issues)}`,
      options,
    );
    this.revision = options?.revision;
  }
}

/** Why a term ended: taken over or released by someone else, expired, stopped without release, released. */
export type LossReason = "conflict" | "expired" | "stopped" | "released";

/**
 * The abort reason of a term's signal, and what `assertLeader()` throws once the term is over or
 * its safe window has closed. `reason` says why; "stopping" when a graceful stop began.
 */
export class LeadershipLostError extends LeaseholdError {
  override name = "LeadershipLostError";
  constructor(
    readonly term: number,
    readonly reason: LossReason | "stopping",
  ) {
    super(`leadership of term ${term} ended: ${reason}`);
  }
}

/**
 * Why a member stopped working on a bucket:
 * - `handoff`: given to the member the assignment names (it asked for it).
 * - `session-expired`: this member's session window closed unrenewed (a pause, an unreachable store).
 * - `session-fenced`: another member ended this member's session after it expired by their clock.
 * - `resharded`: the group's bucket count changed; buckets are taken again under the new count.
 * - `stopping`: this member is leaving (its buckets are released together with its session).
 */
export type RevokeReason = "handoff" | "session-expired" | "session-fenced" | "resharded" | "stopping";

const LEADERSHIP_REASON = {
  handoff: "released",
  "session-expired": "expired",
  "session-fenced": "conflict",
  resharded: "released",
  stopping: "stopping",
} as const satisfies Record<RevokeReason, LeadershipLostError["reason"]>;

/**
 * The abort reason of a bucket's signal in a sharded group, and what a bucket context's
 * `assertLeader()` throws. It is a `LeadershipLostError`, so code written for `runAsLeader`
 * catches it unchanged; `revoked` says why this member stopped working on the bucket.
 */
export class BucketLostError extends LeadershipLostError {
  override name = "BucketLostError";
  constructor(
    readonly bucket: number,
    term: number,
    readonly revoked: RevokeReason,
  ) {
    super(term, LEADERSHIP_REASON[revoked]);
    this.message = `bucket ${bucket}, term ${term}: ${revoked}`;
  }
}

/**
 * Thrown when a store cannot be opened in this install: by `openStore` when the URL is fine but
 * this build has no module for its backend, and by a store on first use when its backend's SDK (an
 * optional peer dependency) is not installed: the message names the package to install.
 */
export class StoreUnavailableError extends LeaseholdError {
  override name = "StoreUnavailableError";
}

/**
 * Thrown by `leasehold release` when the lease is not held by the holder and term named (also when
 * it was taken over while releasing), or when that holder renewed before each of five attempts.
 * Nothing was written.
 */
export class ReleaseRefusedError extends LeaseholdError {
  override name = "ReleaseRefusedError";
}

/**
 * Thrown when a fenced write is refused because the resource has already been written with a
 * newer term: a newer leader exists, so this one must stop acting as leader (retrying with the
 * same term can never succeed). Nothing was written. `seenTerm` is the resource's term when the
 * backend reported it (`undefined` when it did not, e.g. DynamoDB emulators that omit `ALL_OLD`).
 */
export class StaleTermError extends LeaseholdError {
  override name = "StaleTermError";
  constructor(
    /** The fenced resource, for humans: e.g. `gs://bucket/object`, `table "t" row {"id":"x"}`. */
    readonly resource: string,
    /** The term this writer sent. */
    readonly term: number,
    /** The newer term the resource holds, when known. */
    readonly seenTerm: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `fenced write to ${resource} refused: ${
        seenTerm === undefined ? "it has been written with a newer term" : `it holds term ${seenTerm}`
      }, newer than this writer's term ${term}; a newer leader exists, so stop acting as leader`,
      options,
    );
  }
}

/**
 * Thrown when a resource's stored fence is not a term (not a whole number >= 0): something other
 * than a fenced write changed it. The write is refused and nothing is overwritten: an operator
 * must look, as with `LeaseCorruptError`.
 */
export class FenceCorruptError extends LeaseholdError {
  override name = "FenceCorruptError";
  constructor(
    readonly resource: string,
    /** The stored value, as the backend returned it. */
    readonly stored: unknown,
    options?: { cause?: unknown },
  ) {
    super(
      `fenced write to ${resource} refused: its stored fence ${JSON.stringify(stored)} is not a term (expected a whole number >= 0); refusing to overwrite it`,
      options,
    );
  }
}

/** True when `error` is named one of `names` (the `is…` guards; src/http/api-error.ts's too). */
export function named(error: unknown, names: readonly string[]): boolean {
  if (typeof error !== "object" || error === null) return false;
  const name = (error as { name?: unknown }).name;
  return typeof name === "string" && names.includes(name);
}

const ALL = [
  "LeaseholdError",
  "LeaseConflictError",
  "LeaseStoreError",
  "LeaseStillHeldError",
  "StoreContractError",
  "LeaseValidationError",
  "LeaseTermRuleError",
  "LeaseCorruptError",
  "LeadershipLostError",
  "BucketLostError",
  "LeaseholdApiError",
  "StoreUnavailableError",
  "ReleaseRefusedError",
  "StaleTermError",
  "FenceCorruptError",
] as const;

/** Anything leasehold threw on purpose. */
export const isLeaseholdError = (error: unknown): error is LeaseholdError => named(error, ALL);
export const isLeaseConflictError = (error: unknown): error is LeaseConflictError =>
  named(error, ["LeaseConflictError"]);
/** Includes `LeaseStillHeldError` and `StoreContractError`: store refusals that certainly did not apply. */
export const isLeaseStoreError = (error: unknown): error is LeaseStoreError =>
  named(error, ["LeaseStoreError", "LeaseStillHeldError", "StoreContractError"]);
export const isLeaseStillHeldError = (error: unknown): error is LeaseStillHeldError =>
  named(error, ["LeaseStillHeldError"]);
export const isStoreContractError = (error: unknown): error is StoreContractError =>
  named(error, ["StoreContractError"]);
/** Includes `LeaseTermRuleError`, a kind of validation error. */
export const isLeaseValidationError = (error: unknown): error is LeaseValidationError =>
  named(error, ["LeaseValidationError", "LeaseTermRuleError"]);
export const isLeaseTermRuleError = (error: unknown): error is LeaseTermRuleError =>
  named(error, ["LeaseTermRuleError"]);
export const isLeaseCorruptError = (error: unknown): error is LeaseCorruptError => named(error, ["LeaseCorruptError"]);
/** Includes `BucketLostError`, a kind of lost leadership. */
export const isLeadershipLostError = (error: unknown): error is LeadershipLostError =>
  named(error, ["LeadershipLostError", "BucketLostError"]);
export const isBucketLostError = (error: unknown): error is BucketLostError => named(error, ["BucketLostError"]);
export const isStoreUnavailableError = (error: unknown): error is StoreUnavailableError =>
  named(error, ["StoreUnavailableError"]);
export const isReleaseRefusedError = (error: unknown): error is ReleaseRefusedError =>
  named(error, ["ReleaseRefusedError"]);

export const isStaleTermError = (error: unknown): error is StaleTermError => named(error, ["StaleTermError"]);
export const isFenceCorruptError = (error: unknown): error is FenceCorruptError => named(error, ["FenceCorruptError"]);

/** True for an error a store raised because the outcome of a write is unknown. */
export function isAmbiguous(error: unknown): boolean {
  return isLeaseStoreError(error) && error.ambiguous === true;
}
