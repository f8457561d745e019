/**
 * The console's options (`createApp({ console })`, and LEASEHOLD_CONSOLE, LEASEHOLD_HISTORY_TERMS,
 * LEASEHOLD_HISTORY_LEASES in src/api/config/policy.ts) and the one place their bounds live, checked
 * with the same words as the API's other options (src/api/options.ts).
 *
 * Why these bounds: the change log is memory, and every resource has a bound. With the defaults a
 * server keeps at most 1,000 leases x 20 terms; a term's entry is about 200 bytes plus its metadata
 * (at most 1 KiB), so a few MB in practice and about 25 MB at worst.
 */
import { z } from "zod";
import { validate } from "../../lease.js";
import { type Bounds, bounded } from "../options.js";

export const CONSOLE_BOUNDS = {
  /** Terms kept per lease; 0 keeps no history at all. */
  historyTerms: { min: 0, max: 1000, default: 20, unit: "a whole number of terms" },
  /** Leases with history; the one changed least recently is forgotten first. */
  historyLeases: { min: 1, max: 100_000, default: 1000, unit: "a whole number of leases" },
} as const satisfies Record<string, Bounds>;

export interface ConsoleOptions {
  /** Serve the console at GET /ui. Default true. The history route and the streams stay either way. */
  ui?: boolean;
  /** Terms kept per lease in the change log. Default 20; 0 turns history off. */
  historyTerms?: number;
  /** Leases the change log keeps. Default 1000. */
  historyLeases?: number;
}

export type ResolvedConsoleOptions = Required<ConsoleOptions>;

const schema = z
  .strictObject({
    ui: z.boolean({ error: "expected true or false" }).optional(),
    historyTerms: bounded(CONSOLE_BOUNDS.historyTerms).optional(),
    historyLeases: bounded(CONSOLE_BOUNDS.historyLeases).optional(),
  })
  .optional();

/** Checks `options` (throws `LeaseValidationError("API options", ...)` naming `console.<field>`) and fills in defaults. */
export function resolveConsoleOptions(options: unknown): ResolvedConsoleOptions {
  const o = validate("API options", z.object({ console: schema }), { console: options }).console as
    | ConsoleOptions
    | undefined;
  return {
    ui: o?.ui ?? true,
    historyTerms: o?.historyTerms ?? CONSOLE_BOUNDS.historyTerms.default,
    historyLeases: o?.historyLeases ?? CONSOLE_BOUNDS.historyLeases.default,
  };
}
