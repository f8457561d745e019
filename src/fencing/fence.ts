/**
 * Fencing (`leasehold/fencing`): the rule every fenced write follows, and its errors. The
 * backend helpers (`leasehold/fencing/dynamodb`, `/sqlite`, `/gcs`) apply it to one resource at a
 * time: a DynamoDB item, an SQL row, a GCS object.
 *
 * The rule: a resource keeps the highest term that wrote it, beside its data. A write carrying term
 * T applies only if the resource has no term yet or its term is <= T, and it stores T with the
 * data, in one atomic step. So once a newer leader has written, a deposed leader's writes are
 * refused (`StaleTermError`), while a leader may repeat its own writes (equal term).
 *
 * A fence is per resource, never global: each resource remembers the terms that wrote *it*. Terms
 * are only comparable within one lease, so every writer of one resource must take its term from
 * the same lease (or the same bucket of a sharded group). docs/fencing.md has the recipes.
 * Runtime-neutral.
 */
import { z } from "zod";
import { LeaseholdError } from "../errors.js";

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

/** A leader's term: what `runAsLeader` and the `elected` event hand out (1, 2, ...). */
export const termSchema = z
  .number({ error: "expected the leader's term (a number)" })
  .int({ error: "expected a whole number" })
  .min(1, { error: "expected a term >= 1 (terms start at 1)" })
  .max(Number.MAX_SAFE_INTEGER, { error: "expected a safe integer" });

/**
 * Parses a stored fence value read back from a backend: a whole number >= 0 (a decimal string, a number
 * or a bigint), `undefined` when the resource has none yet. Anything else is a `FenceCorruptError`.
 */
export function parseStoredTerm(resource: string, stored: unknown): number | undefined {
  if (stored === undefined || stored === null) return undefined;
  const n =
    (typeof stored === "string" && /^(0|[1-9][0-9]{0,15})$/.test(stored)) || typeof stored === "bigint"
      ? Number(stored)
      : stored;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) throw new FenceCorruptError(resource, stored);
  return n;
}
