/**
 * The lease record (docs/design.md §1), the store contract (§2) and the validation every entry
 * point shares. Runtime-neutral: no Node-only API here.
 */
import { z } from "zod";
import { type FieldIssue, LeaseCorruptError, LeaseValidationError } from "./errors.js";
import type { LeaseRecord, Revision, Stored } from "./record.js";

/** The longest lease name: the pattern allows 192 characters. */
export const MAX_NAME_LENGTH = 192;
export const MAX_HOLDER_LENGTH = 256;
/** Metadata is small by design (it is rewritten on every renewal): at most 1 KiB as UTF-8 JSON. */
export const MAX_METADATA_BYTES = 1024;
export const MIN_LEASE_MS = 10;
export const MAX_LEASE_MS = 24 * 60 * 60 * 1000;

/**
 * Names are paths that cannot move (docs/design.md §1): "/"-separated segments, each of a-z 0-9
 * . _ - starting and ending with a letter or digit. So no segment is empty, "." or "..", which a
 * URL parser, an SDK or an object store could resolve to another name (`a/../b` is `b` to the
 * Azure SDK and to a POSIX-backed S3 server), and a scope that names a prefix keeps its meaning.
 * One rule for every route, store and URL; the length (at most MAX_NAME_LENGTH) is checked beside
 * it. Written without flags or lookarounds: the API publishes this very pattern, and it reads the
 * same in ECMA-262, Python, Go and Rust engines.
 */
export const NAME_PATTERN = /^[a-z0-9]([a-z0-9._-]*[a-z0-9])?(\/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*$/;

/**
 * A listing or scope prefix: whole segments, each followed by "/", then at most the start of one
 * more segment (`adapters/`, `adapters/bill`, `jobs/run-`). Every name starting with it is a name
 * under the same rule, and no prefix can name a dot segment.
 */
export const PREFIX_PATTERN = /^([a-z0-9]([a-z0-9._-]*[a-z0-9])?\/)*([a-z0-9][a-z0-9._-]*)?$/;

/** The rule in words, for every message that refuses a name. */
export const NAME_RULE = `expected 1-${MAX_NAME_LENGTH} characters: "/"-separated segments of a-z 0-9 . _ -, each starting and ending with a letter or digit (no empty, "." or ".." segment)`;

export const nameSchema = z
  .string({ error: "expected a string" })
  .max(MAX_NAME_LENGTH, { error: NAME_RULE, abort: true })
  .regex(NAME_PATTERN, { error: NAME_RULE });

export const prefixSchema = z
  .string({ error: "expected a string" })
  .max(MAX_NAME_LENGTH, { error: `expected at most ${MAX_NAME_LENGTH} characters`, abort: true })
  .regex(PREFIX_PATTERN, {
    error: `expected at most ${MAX_NAME_LENGTH} characters of a-z 0-9 . _ / -: whole name segments, each ending in "/", then the start of one more (no empty, "." or ".." segment)`,
  });

/**
 * The rule names had in earlier releases: any of a-z 0-9 . _ / - between a letter or digit at each
 * end. Only for reading a record a store already holds under such a name (a listing shows it as it
 * is); no route or store call accepts the name.
 */
const LEGACY_NAME_PATTERN = /^[a-z0-9]([a-z0-9._/-]{0,190}[a-z0-9])?$/;

/**
 * No control characters (Unicode Cc: U+0000-001F, U+007F-009F): a holder ends up in logs, headers
 * and tables. Written without flags and without \p{...}, so the API publishes this very pattern
 * and it reads the same in ECMA-262 with or without `u`, in Python, Go and Rust regex engines.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this rule excludes
export const HOLDER_PATTERN = /^[^\x00-\x1F\x7F-\x9F]+$/;

/**
 * An unpaired surrogate: not Unicode text, and a store that writes UTF-8 would change it. No
 * regex engine but ECMA-262's can name one, so it is its own check rather than part of a pattern
 * (the API refuses one anywhere in a request body first: docs/design.md §5).
 */
export const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const holderSchema = z
  .string({ error: "expected a string" })
  .min(1, { error: "expected a non-empty string", abort: true })
  .max(MAX_HOLDER_LENGTH, { error: `expected at most ${MAX_HOLDER_LENGTH} characters` })
  .regex(HOLDER_PATTERN, { error: "expected no control characters" })
  .refine((s) => !UNPAIRED_SURROGATE.test(s), { error: "expected no unpaired surrogates" });

export const leaseMsSchema = z
  .number({ error: "expected a number of milliseconds" })
  .int({ error: "expected a whole number of milliseconds" })
  .min(MIN_LEASE_MS, { error: `expected at least ${MIN_LEASE_MS} ms` })
  .max(MAX_LEASE_MS, { error: `expected at most ${MAX_LEASE_MS} ms (24 h)` });

const utf8 = new TextEncoder();

/**
 * Metadata keys starting with this are the server's own (docs/design.md §1): a caller may not
 * send one, no response shows one, and they do not count towards the caller's 1 KiB.
 */
export const RESERVED_METADATA_PREFIX = "leasehold.";

/**
 * The SHA-256 digest (base64url, 43 characters) of the `instance` of the process holding the
 * lease, written by the API (src/api/instance.ts): a renewal, release or repeated acquisition must
 * come from the instance whose digest this is. The instance itself is never stored.
 */
export const INSTANCE_DIGEST_KEY = `${RESERVED_METADATA_PREFIX}instance`;

/**
 * The session a bound lease rides on (src/bound/, docs/design.md §4 "Bound leases"): the session
 * record's name and term, `<name>@<term>`. Written by the library, not the API.
 */
export const SESSION_KEY = `${RESERVED_METADATA_PREFIX}session`;

/** A bound lease's registered successor: `<session name>@<term> <holder>` (src/bound/refs.ts). */
export const NEXT_KEY = `${RESERVED_METADATA_PREFIX}next`;

/**
 * The instance digest of the process that registered a bound lease's successor through the API
 * (src/api/bound-leases.ts): the process that owns the lease once the holder hands it over.
 * Written by the API, beside `proxied.leasehold.next`.
 */
export const NEXT_INSTANCE_DIGEST_KEY = `${RESERVED_METADATA_PREFIX}next-instance`;

const NAME_BODY = NAME_PATTERN.source.slice(1, -1);
const SESSION_REF = `${NAME_BODY}@[1-9][0-9]{0,15}`;

/** The reserved keys a record may carry, what their values look like and how long they may be. */
const RESERVED_METADATA: Record<string, { shape: RegExp; maxLength: number; expected: string }> = {
  [INSTANCE_DIGEST_KEY]: { shape: /^[A-Za-z0-9_-]{43}$/, maxLength: 43, expected: "a SHA-256 digest in base64url" },
  [NEXT_INSTANCE_DIGEST_KEY]: {
    shape: /^[A-Za-z0-9_-]{43}$/,
    maxLength: 43,
    expected: "a SHA-256 digest in base64url",
  },
  [SESSION_KEY]: {
    shape: new RegExp(`^${SESSION_REF}$`),
    maxLength: MAX_NAME_LENGTH + 17,
    expected: "<session name>@<term>",
  },
  [NEXT_KEY]: {
    shape: new RegExp(`^${SESSION_REF} ${HOLDER_PATTERN.source.slice(1, -1)}$`),
    maxLength: MAX_NAME_LENGTH + 18 + MAX_HOLDER_LENGTH,
    expected: "<session name>@<term> <holder>",
  },
};

export const isReservedKey = (key: string): boolean => key.startsWith(RESERVED_METADATA_PREFIX);

/** The caller's part of a metadata map: without the reserved keys. */
export function callerMetadata(metadata: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(metadata)) if (!isReservedKey(k)) out[k] = v;
  return out;
}

/** A metadata map as callers send it: strings, at most 1 KiB as JSON, no reserved key. */
export const callerMetadataSchema = z
  .record(z.string(), z.string({ error: "expected string values" }), { error: "expected an object of strings" })
  .superRefine((m, ctx) => {
    for (const key of Object.keys(m)) {
      if (isReservedKey(key)) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: `expected no key starting with "${RESERVED_METADATA_PREFIX}" (reserved for the server)`,
        });
      }
    }
    if (utf8.encode(JSON.stringify(m)).length > MAX_METADATA_BYTES) {
      ctx.addIssue({ code: "custom", message: `expected at most ${MAX_METADATA_BYTES} bytes as JSON` });
    }
  });

/**
 * A record's metadata: the caller's (at most 1 KiB as JSON) and the server's reserved keys, each
 * known and well-formed, so the whole map stays bounded.
 */
export const metadataSchema = z
  .record(z.string(), z.string({ error: "expected string values" }), { error: "expected an object of strings" })
  .superRefine((m, ctx) => {
    for (const [key, value] of Object.entries(m)) {
      if (!isReservedKey(key)) continue;
      const rule = RESERVED_METADATA[key];
      if (!rule || value.length > rule.maxLength || !rule.shape.test(value)) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: rule ? `expected ${rule.expected}` : "expected no unknown reserved key",
        });
      }
    }
    if (utf8.encode(JSON.stringify(callerMetadata(m))).length > MAX_METADATA_BYTES) {
      ctx.addIssue({ code: "custom", message: `expected at most ${MAX_METADATA_BYTES} bytes as JSON` });
    }
  });

const wallMsSchema = z
  .number({ error: "expected wall-clock milliseconds" })
  .int({ error: "expected whole milliseconds" })
  .nonnegative({ error: "expected a non-negative number" });

/** A scheduled job's latest fire (src/record.ts `FireState`). */
export const fireSchema = z.strictObject({
  at: wallMsSchema,
  done: z.boolean({ error: "expected true or false" }),
});

export const recordSchema = z.strictObject({
  name: nameSchema,
  holder: holderSchema.nullable(),
  term: z
    .number({ error: "expected a number" })
    .int({ error: "expected a whole number" })
    .nonnegative({ error: "expected a non-negative number" }),
  leaseMs: leaseMsSchema,
  acquiredAt: wallMsSchema,
  renewedAt: wallMsSchema,
  metadata: metadataSchema,
  writeId: z.string({ error: "expected a string" }).min(1).max(64),
  fire: fireSchema.optional(),
});

/** A record as read back: a name written under the earlier, looser rule is still readable. */
const storedRecordSchema = recordSchema.extend({
  name: z.string({ error: "expected a string" }).regex(LEGACY_NAME_PATTERN, { error: NAME_RULE }),
});

export type { FireState, LeaseRecord, Revision, Stored } from "./record.js";

/** Per-call options a store should honour where its client can (abort an in-flight request). */
export interface CallOptions {
  signal?: AbortSignal;
}

export interface ListOptions {
  /** Only names strictly after this one (for cursors). */
  startAfter?: string;
  /** Stop after this many records. */
  limit?: number;
}

/**
 * The store contract (docs/design.md §2). `put` applies atomically or throws:
 * `LeaseConflictError` when `expected` is not current (`null` = create if absent),
 * `LeaseStoreError` with `ambiguous: true` when the outcome is unknown. Never retried blindly.
 */
export interface LeaseStore {
  /** Strongly consistent read; `null` when the lease never existed. */
  get(name: string, options?: CallOptions): Promise<Stored | null>;
  put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored>;
  /** Records whose name starts with `prefix`, in name order. Optional capability. */
  list?(prefix: string, options?: ListOptions): AsyncIterable<Stored>;
  /**
   * Optional: the leases `names`, in as few requests as the backend allows (DynamoDB BatchGetItem
   * of up to 100 keys, one SQL `SELECT ... IN`). Each read is as strong as `get`'s: it sees every
   * write acknowledged before the call began. Resolves to one entry per name, in the order given:
   * the record, or `null` where none exists. Every name is checked before any I/O; a corrupt record
   * fails the whole call (`LeaseCorruptError`), as `get` of it would. Callers use `readMany`
   * (src/read-many.ts), which falls back to bounded parallel `get`s for a store without it.
   */
  getMany?(names: readonly string[], options?: CallOptions): Promise<Array<Stored | null>>;
  /**
   * Optional push capability: yields the record each time it changes (first the current one),
   * so followers learn of a release without polling. Ends when `signal` aborts.
   */
  watch?(name: string, signal: AbortSignal): AsyncIterable<Stored | null>;
  /** Releases client resources (connections, file handles). */
  close?(): Promise<void>;
  /**
   * Optional: throws the `LeaseValidationError` that `put` would throw when `revision` cannot be
   * one this store issued. Lets the API answer a malformed `If-Match` with 400 before any I/O.
   */
  checkRevision?(revision: Revision): void;
  /**
   * Optional: what the backend allows (GCS: about one write per second to one object). The
   * elector's option validation refuses settings beyond it (`storeLimitIssues`).
   */
  readonly limits?: StoreLimits;
}

/** Limits a backend imposes on how an elector may use it, declared by the backend (src/backends/). */
export interface StoreLimits {
  /** The fastest one lease may be written (ms): renewals closer together than this are refused. */
  minWriteIntervalMs?: number;
  /** Why, for the message: "GCS allows about one write per second to one object". */
  reason?: string;
}

/** The elector settings `limits` refuse, as field issues (none when they fit). */
export function storeLimitIssues(limits: StoreLimits | undefined, settings: { renewMs: number }): FieldIssue[] {
  const min = limits?.minWriteIntervalMs;
  if (min === undefined || settings.renewMs >= min) return [];
  return [
    {
      path: "renewMs",
      message: `expected at least ${min} ms, got ${settings.renewMs}: ${limits?.reason ?? `this store allows one write to a lease every ${min} ms`}, and every renewal is a write (use leaseMs >= ${3 * min} with renewMs = leaseMs / 3)`,
    },
  ];
}

export function zodIssues(error: z.ZodError): FieldIssue[] {
  return error.issues.flatMap((issue) => {
    const path = issue.path.map(String);
    // One issue per unknown field, named by its own path, so a client sees which field to drop.
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ path: [...path, key].join("."), message: "unknown field" }));
    }
    return [{ path: path.join("."), message: issue.message }];
  });
}

/** Parses `value` with `schema` or throws a `LeaseValidationError` naming every failing field. */
export function validate<S extends z.ZodType>(what: string, schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new LeaseValidationError(what, zodIssues(result.error));
  return result.data;
}

export function validateName(name: unknown): string {
  return validate("lease name", nameSchema, name);
}

export function validatePrefix(prefix: unknown): string {
  return validate("lease prefix", prefixSchema, prefix);
}

/** Checks a record before a store writes it: a store never persists what it could not read back. */
export function validateRecord(record: unknown): LeaseRecord {
  return validate("lease record", recordSchema, record);
}

/**
 * Parses what a store read back (already-decoded JSON or a JSON string). Anything that is not a
 * valid record for `name` is a `LeaseCorruptError`, never silently repaired.
 */
export function parseRecord(name: string, raw: unknown): LeaseRecord {
  let value = raw;
  if (typeof raw === "string") {
    try {
      value = JSON.parse(raw);
    } catch (cause) {
      throw new LeaseCorruptError(name, [{ path: "", message: "not valid JSON" }], { cause });
    }
  }
  const result = storedRecordSchema.safeParse(value);
  if (!result.success) throw new LeaseCorruptError(name, zodIssues(result.error));
  if (result.data.name !== name) {
    throw new LeaseCorruptError(name, [{ path: "name", message: `record names "${result.data.name}"` }]);
  }
  return result.data;
}

/** A fresh id for one write. `crypto.randomUUID` exists in Node 20, workerd and browsers. */
export function newWriteId(): string {
  return crypto.randomUUID();
}

/** The last name in list order that starts with `prefix` is below `prefix + "~"`: '~' sorts after a-z0-9._/-. */
export function prefixUpperBound(prefix: string): string {
  return `${prefix}~`;
}
