/**
 * Option fields more than one backend declares, written once so their checks and messages agree.
 * Runtime-neutral.
 */
import { z } from "zod";

/** Whole milliseconds from `min` to `max`; `maxInWords` names the upper bound in the message ("1 hour"). */
export function millisecondsOption(min: number, max: number, maxInWords: string) {
  return z
    .number({ error: "expected milliseconds" })
    .int({ error: "expected whole milliseconds" })
    .min(min, { error: `expected at least ${min} ms` })
    .max(max, { error: `expected at most ${max} ms (${maxInWords})` });
}
