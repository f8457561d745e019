/**
 * Every error leasehold throws. `name` is the discriminant (safe across bundles and realms,
 * unlike `instanceof`), `cause` carries the backend's own error when there is one.
 */
import type { Stored } from "./lease.js";

/** Base class: catch this to catch anything leasehold throws on purpose. */
export class LeaseholdError extends Error {
  override name = "LeaseholdError";
}

/**
 * Thrown by `LeaseStore.put` when the expected revision is not the current one
 * (or the record already exists for a create). `current` is the record that won, when the
 * backend returned it with the failure or the store could read it cheaply; `undefined` when
 * unknown, `null` when the lease does not exist.
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

/** One failing field of a rejected input: a dotted path and what was expected. */
export interface FieldIssue {
  path: string;
  message: string;
}

/** Thrown when an option, a name, a holder or a record given to leasehold is invalid. Nothing was changed. */
export class LeaseValidationError extends LeaseholdError {
  override name = "LeaseValidationError";
  constructor(
    readonly what: string,
    readonly issues: FieldIssue[],
  ) {
    super(`invalid ${what}: ${issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ")}`);
  }
}

/**
 * Thrown when a write would break one of the record's invariants across revisions (a term that
 * goes down or skips, a new holder without term + 1, a release that changes the term): the HTTP
 * API refuses such a write whatever the token allows (src/term-rules.ts). Nothing was changed.
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
 * mistyped fields, foreign data). leasehold never overwrites such a record: an operator must look.
 */
export class LeaseCorruptError extends LeaseholdError {
  override name = "LeaseCorruptError";
  constructor(
    readonly lease: string,
    readonly issues: FieldIssue[],
    options?: { cause?: unknown },
  ) {
    super(
      `lease "${lease}" holds a record leasehold cannot read (refusing to overwrite it): ${issues
        .map((i) => (i.path ? `${i.path}: ${i.message}` : i.message))
        .join("; ")}`,
      options,
    );
  }
}

/** True for an error a store raised because the outcome of a write is unknown. */
export function isAmbiguous(error: unknown): boolean {
  return error instanceof LeaseStoreError && error.ambiguous;
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
