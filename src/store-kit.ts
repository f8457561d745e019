/**
 * `leasehold/store-kit`: what a store author needs beside the `LeaseStore` interface (in the
 * main entry): the types of its calls, the errors a store throws (a conflict carrying the current
 * record; a record it cannot read, `LeaseCorruptError`, never repaired), the record's schema and
 * limits, validation that names each failing field, parsing what was read back, revisions for
 * counter-based stores, and the one write path (`CasWriter`) for callers that write records
 * themselves. Run your store against `leasehold/testkit`'s contract suites. Runtime-neutral.
 */

export { parseRevision } from "./backends/revision.js";
export { type CallLimit, CasWriter, type CasWriterOptions, type WriteOutcome } from "./elector/cas.js";
export { isLeaseConflictError, isLeaseCorruptError, LeaseConflictError, LeaseCorruptError } from "./errors.js";
export type { CallOptions, ListOptions, Revision } from "./lease.js";
export {
  holderSchema,
  leaseMsSchema,
  MAX_HOLDER_LENGTH,
  MAX_LEASE_MS,
  MAX_METADATA_BYTES,
  MAX_NAME_LENGTH,
  MIN_LEASE_MS,
  metadataSchema,
  NAME_PATTERN,
  nameSchema,
  newWriteId,
  PREFIX_PATTERN,
  parseRecord,
  prefixSchema,
  prefixUpperBound,
  recordSchema,
  validate,
  validateName,
  validatePrefix,
  validateRecord,
  zodIssues,
} from "./lease.js";
export {
  isUnreadable,
  type Listed,
  orUnreadable,
  settleUnreadable,
  storedAt,
  type Unreadable,
  unreadable,
} from "./listing.js";
export { checkTermRules, type TermRule, type TermRuleViolation } from "./term-rules.js";
