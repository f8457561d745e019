/**
 * The lease record (docs/design.md §1), the store contract (§2) and the validation every entry
 * point shares. Runtime-neutral: no Node-only API here.
 */
import { z } from "zod";
import { type FieldIssue, LeaseCorruptError, LeaseValidationError } from "./errors.js";
import { liftLegacyFields } from "./legacy-fields.js";
import type { Listed } from "./listing.js";
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
 * more segment (`adapters/`, `adapters/bill`, `jobs/run-`; a protocol record's segment starts with
 * `_`: `adapters/billing/_members/`). Every name starting with it is a record name under the same
 * rules, and no prefix can name a dot segment.
 */
export const PREFIX_PATTERN = /^(_?[a-z0-9]([a-z0-9._-]*[a-z0-9])?\/)*(_?[a-z0-9][a-z0-9._-]*|_)?$/;

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
    error: `expected at most ${MAX_NAME_LENGTH} characters of a-z 0-9 . _ / -: whole name segments, each ending in "/", then the start of one more (no empty, "." or ".." segment; a protocol record's segment starts with "_")`,
  });

/**
 * The rule names had in earlier releases: any of a-z 0-9 . _ / - between a letter or digit at each
 * end. Only for reading a record a store already holds under such a name (a listing shows it as it
 * is); no route or store call accepts the name.
 */
const LEGACY_NAME_PATTERN = /^[a-z0-9]([a-z0-9._/-]{0,190}[a-z0-9])?$/;

/**
 * The Unicode format characters (Cf) of the Basic Multilingual Plane and the line and paragraph
 * separators (U+2028, U+2029), as a character-class body of literal characters and ranges: bidirectional controls (U+061C, U+200E/F, U+202A-202E,
 * U+2066-2069) make `\u202e1-dop` show as "pod-1", zero-width ones make two names look alike, and
 * a separator starts a new line in a log.
 * Computed from this engine's Unicode tables, so the published pattern is exactly what is refused.
 */
const BMP_FORMAT_CLASS = (() => {
  const cf = /[\p{Cf}\p{Zl}\p{Zp}]/u;
  let out = "";
  for (let c = 0; c <= 0xffff; c++) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    if (!cf.test(String.fromCharCode(c))) continue;
    let end = c;
    while (end < 0xffff && cf.test(String.fromCharCode(end + 1))) end++;
    out += end === c ? String.fromCharCode(c) : `${String.fromCharCode(c)}-${String.fromCharCode(end)}`;
    c = end;
  }
  return out;
})();

/**
 * Text a person reads as it is: no control characters (Unicode Cc: U+0000-001F, U+007F-009F) and
 * no format characters or line separators of the BMP (Unicode Cf, Zl, Zp: `BMP_FORMAT_CLASS`): a holder and metadata end up
 * in logs, headers, tables and the console. Written without flags and without \p{...} (the format
 * characters are literal), so the API publishes this very pattern and it reads the same in
 * ECMA-262 with or without `u`, in Python, Go and Rust regex engines. The few format characters
 * outside the BMP (tags, U+E0001...) are refused by `FORMAT_CHARACTER`, which no flagless pattern
 * can name.
 */
export const HOLDER_PATTERN = new RegExp(`^[^\\x00-\\x1F\\x7F-\\x9F${BMP_FORMAT_CLASS}]+$`);

/**
 * A metadata key or value: `HOLDER_PATTERN`'s characters, any number of them. Published in the
 * document for metadata's keys and values, as the holder's pattern is.
 */
export const PLAIN_TEXT_PATTERN = new RegExp(`^[^\\x00-\\x1F\\x7F-\\x9F${BMP_FORMAT_CLASS}]*$`);

/** Any control or format character or line separator (Unicode Cc, Cf, Zl, Zp), in or out of the BMP. */
const FORMAT_CHARACTER = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

const PLAIN_TEXT =
  "expected no control, format or line-separator characters (Unicode Cc, Cf, Zl, Zp: bidirectional controls among them)";

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
  .regex(HOLDER_PATTERN, { error: PLAIN_TEXT, abort: true })
  .refine((s) => !FORMAT_CHARACTER.test(s), { error: PLAIN_TEXT })
  .refine((s) => !UNPAIRED_SURROGATE.test(s), { error: "expected no unpaired surrogates" });

export const leaseMsSchema = z
  .number({ error: "expected a number of milliseconds" })
  .int({ error: "expected a whole number of milliseconds" })
  .min(MIN_LEASE_MS, { error: `expected at least ${MIN_LEASE_MS} ms` })
  .max(MAX_LEASE_MS, { error: `expected at most ${MAX_LEASE_MS} ms (24 h)` });

const utf8 = new TextEncoder();

/**
 * A lease name segment, and one of the protocol's own segments (`_` then a segment), which no
 * lease name can contain: the records of sharded groups and process sessions live under them
 * (docs/design.md §1 "Protocol records"), so no lease name and no other group's record can land
 * on one.
 */
const SEGMENT = "[a-z0-9]([a-z0-9._-]*[a-z0-9])?";
const LEASE_NAME = `${SEGMENT}(/${SEGMENT})*`;

/**
 * The names of the protocol's own records: `[<scope>/]_sessions/<id>` (a process session),
 * `<group>/_config`, `<group>/_members/<id>` and `<group>/_buckets/<index>` (a sharded group),
 * `_quota/q-<32 hex digits>` (the API's count of one token's records under one prefix).
 * Exactly one `_` segment, at a fixed place, so each name has one role (`recordRole`).
 */
const SERVED_PROTOCOL_NAME = `(${LEASE_NAME}/)?_sessions/${SEGMENT}|${LEASE_NAME}/_config|${LEASE_NAME}/_(members|buckets)/${SEGMENT}`;
/** The API's own records (its quota counts): stores hold them, no route serves them. */
const SERVER_RECORD_NAME = "_quota/q-[0-9a-f]{32}";
const PROTOCOL_NAME = `${SERVED_PROTOCOL_NAME}|${SERVER_RECORD_NAME}`;
export const PROTOCOL_NAME_PATTERN = new RegExp(`^(${PROTOCOL_NAME})$`);

/** A process session record's name: `[<scope>/]_sessions/<id>`. */
export const SESSION_NAME_PATTERN = new RegExp(`^(${LEASE_NAME}/)?_sessions/${SEGMENT}$`);

/**
 * Any record's name: a lease name or a protocol record's. One pattern without flags or
 * lookarounds, so the API can publish it (it reads the same in ECMA-262, Python, Go and Rust).
 */
export const RECORD_NAME_PATTERN = new RegExp(`^(${LEASE_NAME}|${PROTOCOL_NAME})$`);

/** A name the API serves (its wire pattern): any record's but the server's own (`_quota/`). */
export const SERVED_NAME_PATTERN = new RegExp(`^(${LEASE_NAME}|${SERVED_PROTOCOL_NAME})$`);

/** What a record is, by its name (the only place a role is decided). */
export type RecordRole = "lease" | "session" | "group-config" | "member" | "bucket" | "quota";

/** The role of the record named `name` (a lease name, or a protocol record's name). */
export function recordRole(name: string): RecordRole {
  if (!name.includes("/_") && !name.startsWith("_")) return "lease";
  if (name.startsWith("_sessions/") || name.includes("/_sessions/")) return "session";
  if (name.startsWith("_quota/")) return "quota";
  if (name.endsWith("/_config")) return "group-config";
  return name.includes("/_members/") ? "member" : "bucket";
}

const SERVED_PROTOCOL_NAMES =
  "[<scope>/]_sessions/<id>, <group>/_config, <group>/_members/<id>, <group>/_buckets/<index>";

/** A record's name: a lease name, or one of the protocol's own (PROTOCOL_NAME_PATTERN). */
export const RECORD_NAME_RULE = `${NAME_RULE}, or a protocol record's name (${SERVED_PROTOCOL_NAMES}, _quota/q-<32 hex digits>)`;

/** A name the API serves (SERVED_NAME_PATTERN): a record's, but not the server's own quota records. */
export const SERVED_NAME_RULE = `${NAME_RULE}, or a protocol record's name (${SERVED_PROTOCOL_NAMES})`;

export const recordNameSchema = z
  .string({ error: "expected a string" })
  .max(MAX_NAME_LENGTH, { error: RECORD_NAME_RULE, abort: true })
  .regex(RECORD_NAME_PATTERN, { error: RECORD_NAME_RULE });

/**
 * Metadata keys a caller may not use (docs/design.md §1): the library kept its protocol state
 * under `leasehold.` before 0.2.0, and the HTTP store escaped it as `proxied.leasehold.`. Protocol
 * state is now typed fields of the record, and a key of either prefix is refused, so no caller
 * can make a record look like it carries some.
 */
export const RESERVED_METADATA_PREFIXES = ["leasehold.", "proxied.leasehold."] as const;

export const isReservedKey = (key: string): boolean => RESERVED_METADATA_PREFIXES.some((p) => key.startsWith(p));

/**
 * Metadata keys that name a JavaScript object's own machinery: `__proto__` cannot be kept as a key
 * of a plain object at all (it was dropped without a word), and a reader that indexes an object by
 * `constructor` or `prototype` gets something that is not the caller's. Refused by name.
 */
export const FORBIDDEN_METADATA_KEYS = ["__proto__", "constructor", "prototype"] as const;

const isForbiddenKey = (key: string): boolean => (FORBIDDEN_METADATA_KEYS as readonly string[]).includes(key);

/**
 * A record's metadata, the caller's own: strings, at most 1 KiB as UTF-8 JSON, no reserved key,
 * no `FORBIDDEN_METADATA_KEYS`, no control or format character in a key or a value (each refused
 * by name).
 */
export const metadataSchema = metadataOf(true);

/**
 * Metadata as `metadataSchema` checks it; `plainText` false: as a record written before 0.2.0 may
 * hold it (format characters and `constructor`/`prototype` keys were allowed), for reading only.
 */
function metadataOf(plainText: boolean) {
  return z
    .record(z.string(), z.string({ error: "expected string values" }), { error: "expected an object of strings" })
    .superRefine((m, ctx) => {
      for (const [key, value] of Object.entries(m)) {
        if (plainText && isForbiddenKey(key)) {
          ctx.addIssue({
            code: "custom",
            path: [key],
            message: `expected no key ${FORBIDDEN_METADATA_KEYS.map((k) => `"${k}"`).join(", ")} (a JavaScript object's own machinery)`,
          });
        }
        if (plainText && FORMAT_CHARACTER.test(key)) {
          ctx.addIssue({ code: "custom", path: [key], message: `key: ${PLAIN_TEXT}` });
        }
        if (plainText && FORMAT_CHARACTER.test(value)) {
          ctx.addIssue({ code: "custom", path: [key], message: PLAIN_TEXT });
        }
        if (isReservedKey(key)) {
          ctx.addIssue({
            code: "custom",
            path: [key],
            message: `expected no key starting with ${RESERVED_METADATA_PREFIXES.map((p) => `"${p}"`).join(" or ")} (protocol state is the record's own typed fields, never metadata)`,
          });
        }
      }
      if (utf8.encode(JSON.stringify(m)).length > MAX_METADATA_BYTES) {
        ctx.addIssue({ code: "custom", message: `expected at most ${MAX_METADATA_BYTES} bytes as JSON` });
      }
    });
}

const positiveTerm = z
  .number({ error: "expected a number" })
  .int({ error: "expected a whole number" })
  .min(1, { error: "expected a term of at least 1" })
  .max(Number.MAX_SAFE_INTEGER, { error: "expected at most 2^53-1" });

export const sessionRefSchema = z.strictObject(
  { name: recordNameSchema, term: positiveTerm },
  { error: "expected a session tenure: { name, term }" },
);

export const successorSchema = z.strictObject(
  { holder: holderSchema, session: sessionRefSchema },
  { error: "expected a successor: { holder, session: { name, term } }" },
);

/** An instance digest: SHA-256 in base64url without padding (src/api/instance.ts). */
export const digestSchema = z
  .string({ error: "expected a string" })
  .regex(/^[A-Za-z0-9_-]{43}$/, { error: "expected a SHA-256 digest in base64url (43 characters)" });

export const upstreamSchema = z.strictObject(
  { holderDigest: digestSchema.optional(), successorDigest: digestSchema.optional() },
  { error: "expected { holderDigest?, successorDigest? }" },
);

const wallMsSchema = z
  .number({ error: "expected wall-clock milliseconds" })
  .int({ error: "expected whole milliseconds" })
  .nonnegative({ error: "expected a non-negative number" });

/** A process session record's count of the leases it gave up (src/record.ts `releases`). */
export const releasesSchema = z
  .number({ error: "expected a number" })
  .int({ error: "expected a whole number" })
  .nonnegative({ error: "expected a non-negative number" })
  .max(Number.MAX_SAFE_INTEGER, { error: "expected at most 2^53-1" });

/** A scheduled job's latest fire (src/record.ts `FireState`). */
export const fireSchema = z.strictObject({
  at: wallMsSchema,
  done: z.boolean({ error: "expected true or false" }),
});

const recordFields = z.strictObject({
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
  session: sessionRefSchema.optional(),
  successor: successorSchema.optional(),
  holderDigest: digestSchema.optional(),
  successorDigest: digestSchema.optional(),
  upstream: upstreamSchema.optional(),
  fire: fireSchema.optional(),
  releases: releasesSchema.optional(),
});

/**
 * What a record's fields must agree on, beyond each field's own shape: a lease is bound to a
 * session or has a successor only while held, and a successor's proof comes with a successor.
 */
function checkProtocolFields(r: z.infer<typeof recordFields>, ctx: z.RefinementCtx): void {
  if (r.holder === null && r.session !== undefined) {
    ctx.addIssue({ code: "custom", path: ["session"], message: "expected no session on a released record" });
  }
  if (r.holder === null && r.successor !== undefined) {
    ctx.addIssue({ code: "custom", path: ["successor"], message: "expected no successor on a released record" });
  }
  if (r.successorDigest !== undefined && r.successor === undefined) {
    ctx.addIssue({ code: "custom", path: ["successorDigest"], message: "expected a successor beside its proof" });
  }
}

/** The record's optional protocol fields (docs/design.md §1), for stores that keep fields apart. */
export const PROTOCOL_FIELDS = [
  "session",
  "successor",
  "holderDigest",
  "successorDigest",
  "upstream",
  "fire",
  "releases",
] as const satisfies readonly (keyof LeaseRecord)[];

export const recordSchema = recordFields.extend({ name: recordNameSchema }).superRefine(checkProtocolFields);

/**
 * A holder as a record written before 0.2.0 may hold it (format characters were allowed), for
 * reading only: such a record stays readable (a listing and GET show it), and a new write of it
 * needs a plain-text holder.
 */
const storedHolderSchema = z
  .string({ error: "expected a string" })
  .min(1, { error: "expected a non-empty string", abort: true })
  .max(MAX_HOLDER_LENGTH, { error: `expected at most ${MAX_HOLDER_LENGTH} characters` })
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this rule excludes
  .regex(/^[^\x00-\x1F\x7F-\x9F]+$/, { error: "expected no control characters" });

/**
 * A record as read back: a name written under the earlier, looser rule is still readable, and so
 * are a holder and metadata written before format characters were refused.
 */
const storedRecordSchema = recordFields
  .extend({
    holder: storedHolderSchema.nullable(),
    metadata: metadataOf(false),
    name: z
      .string({ error: "expected a string" })
      .refine((name) => LEGACY_NAME_PATTERN.test(name) || PROTOCOL_NAME_PATTERN.test(name), {
        error: RECORD_NAME_RULE,
      }),
  })
  .superRefine(checkProtocolFields);

export type { Listed, Unreadable } from "./listing.js";
export type { FireState, LeaseRecord, Revision, SessionRef, Stored, Successor, UpstreamProof } from "./record.js";

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
  /**
   * Records whose name starts with `prefix`, in name order. Optional capability. A record the
   * store cannot read is yielded in its place as `Unreadable` (src/listing.ts), never thrown, so
   * one bad record never fails a listing; `limit` counts it as one entry.
   */
  list?(prefix: string, options?: ListOptions): AsyncIterable<Listed>;
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
  /**
   * false: an API over this store keeps none of its own records in it (quota counts). The HTTP
   * store's: the API behind it keeps its own, refuses another server's, and counts this server's
   * creates against this server's token.
   */
  serverRecords?: false;
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

/** A process session record's name, `[<scope>/]_sessions/<id>`, in words. */
export const SESSION_NAME_RULE = `expected a process session record's name: [<scope>/]_sessions/<id> (scope: a lease name's segments; id: one segment of a-z 0-9 . _ -, starting and ending with a letter or digit), at most ${MAX_NAME_LENGTH} characters`;

export const sessionNameSchema = z
  .string({ error: "expected a string" })
  .max(MAX_NAME_LENGTH, { error: SESSION_NAME_RULE, abort: true })
  .regex(SESSION_NAME_PATTERN, { error: SESSION_NAME_RULE });

/** A lease name or a protocol record's name: what a store reads and writes (stores do not care which). */
export function validateRecordName(name: unknown): string {
  return validate("record name", recordNameSchema, name);
}

export function validatePrefix(prefix: unknown): string {
  return validate("lease prefix", prefixSchema, prefix);
}

/** Checks a record before a store writes it: a store never persists what it could not read back. */
export function validateRecord(record: unknown): LeaseRecord {
  // zod types an absent optional field as `?: T | undefined`; parsing never adds the key.
  return validate("lease record", recordSchema, record) as LeaseRecord;
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
  const result = storedRecordSchema.safeParse(liftLegacyFields(value));
  if (!result.success) throw new LeaseCorruptError(name, zodIssues(result.error));
  if (result.data.name !== name) {
    throw new LeaseCorruptError(name, [{ path: "name", message: `record names "${result.data.name}"` }]);
  }
  return result.data as LeaseRecord;
}

/** A fresh id for one write. `crypto.randomUUID` exists in Node 20, workerd and browsers. */
export function newWriteId(): string {
  return crypto.randomUUID();
}

/**
 * `record` released (docs/design.md §1): holder null, the term kept, no tenure left on it (a bound
 * lease's `session` and `successor`), stamped `renewedAt`, a new write id; `metadata` replaces the
 * record's when given (a member's requests end with its session, a fence says who fenced). The one
 * builder of a release, for every writer.
 */
export function releasedRecord(record: LeaseRecord, renewedAt: number, metadata?: Record<string, string>): LeaseRecord {
  const { session: _session, successor: _successor, successorDigest: _proof, ...rest } = record;
  return { ...rest, holder: null, metadata: metadata ?? rest.metadata, renewedAt, writeId: newWriteId() };
}

/** The last name in list order that starts with `prefix` is below `prefix + "~"`: '~' sorts after a-z0-9._/-. */
export function prefixUpperBound(prefix: string): string {
  return `${prefix}~`;
}
