/**
 * The options every object store (GCS, S3, Azure Blob) shares, as zod fields each backend's
 * declaration spreads into its own options schema, and their defaults. Beside the declarations,
 * not in the core (./store.ts): a declaration imports no store. Runtime-neutral.
 */
import { z } from "zod";
import { OBJECT_PREFIX_PATTERN } from "./keys.js";

export const DEFAULT_OBJECT_PREFIX = "leases/";
export const DEFAULT_OBJECT_TIMEOUT_MS = 10_000;

const POSITIVE_MS = "expected a positive number of milliseconds";
const milliseconds = z.number({ error: POSITIVE_MS }).finite({ error: POSITIVE_MS }).positive({ error: POSITIVE_MS });

/** The options every object store shares, as zod fields for each store's own schema. */
export const objectStoreFields = {
  /** Key prefix for every lease; default "leases/". Objects are `<prefix><name>.json`. */
  prefix: z
    .string({ error: "expected at most 512 printable ASCII characters without spaces" })
    .regex(OBJECT_PREFIX_PATTERN, { error: "expected at most 512 printable ASCII characters without spaces" })
    .optional(),
  /** Per-request timeout in ms for the client the store creates (a write that times out is ambiguous). */
  timeoutMs: milliseconds.optional(),
};
