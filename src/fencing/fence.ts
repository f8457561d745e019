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
 *
 * Every helper decides with `admits` (or `refuseOlder`, which throws the one error of a refusal),
 * and reads a stored fence back with `parseStoredTerm`: the rule lives here, once.
 * Runtime-neutral.
 */
import { z } from "zod";
import { FenceCorruptError, StaleTermError } from "../errors.js";

export { FenceCorruptError, isFenceCorruptError, isStaleTermError, StaleTermError } from "../errors.js";

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

/** The rule: a write carrying `term` applies over a resource whose stored term is absent or <= `term`. */
export function admits(stored: number | undefined, term: number): boolean {
  return stored === undefined || stored <= term;
}

/**
 * Throws `StaleTermError` when `resource`'s stored term is newer than the writer's `term`; returns
 * when the rule admits the write.
 */
export function refuseOlder(
  resource: string,
  term: number,
  stored: number | undefined,
  options?: { cause?: unknown },
): void {
  if (!admits(stored, term)) throw new StaleTermError(resource, term, stored, options);
}
