import { LeaseValidationError } from "../errors.js";
import type { Revision } from "../lease.js";

/** Stores whose revision is a positive integer counter (memory, SQLite, DynamoDB) share this check. */
export function parseRevision(revision: Revision): number {
  const n = typeof revision === "string" && /^[1-9][0-9]{0,15}$/.test(revision) ? Number(revision) : Number.NaN;
  if (!Number.isSafeInteger(n)) {
    throw new LeaseValidationError("revision", [
      {
        path: "expected",
        message: `expected a revision this store issued (a positive integer), got ${JSON.stringify(revision)}`,
      },
    ]);
  }
  return n;
}
