/**
 * The wire contract of the HTTP API: request and response schemas shared by the server
 * (validation and the OpenAPI document) and the client side (the typed client, the HTTP store,
 * the SSE reader). Neither side owns it, so the client never imports the server. Field rules
 * come from src/lease.ts so every entry point agrees. Plain zod: documentation rides on zod's own
 * `.meta()` (`id` names a component), which the server's OpenAPI generator reads, so a client
 * bundle needs no OpenAPI code. Runtime-neutral.
 *
 * Every rule here is one the published JSON Schema states exactly (docs/design.md §5): patterns
 * carry no JavaScript flag and mean the same in ECMA-262 with or without `u` and in Python, Go and
 * Rust regex engines; integers are bounded (at most 2^53-1, the largest a JSON number carries
 * exactly). What JSON Schema cannot state is said in words: metadata's size as JSON, and that a
 * request body is I-JSON (no unpaired surrogates in any string, checked before these schemas).
 */
import { z } from "zod";
import {
  holderSchema,
  MAX_HOLDER_LENGTH,
  MAX_LEASE_MS,
  MAX_METADATA_BYTES,
  MAX_NAME_LENGTH,
  MIN_LEASE_MS,
  metadataSchema,
  NAME_PATTERN,
  prefixSchema,
} from "../lease.js";

/** 2^53-1: beyond it a JSON number no longer names one integer (9007199254740993 reads as ...992). */
export const MAX_WIRE_INTEGER = Number.MAX_SAFE_INTEGER;

/**
 * A whole number within [min, max]. The bound is checked first and stops there, so a number
 * beyond 2^53-1 (which JSON cannot carry exactly) gets one clear message, not "not whole".
 */
function wholeNumber(min: number, max: number, messages: { type: string; min: string; max: string; int: string }) {
  return z
    .number({
      error: (issue) =>
        issue.input === Number.POSITIVE_INFINITY || issue.input === Number.NEGATIVE_INFINITY
          ? issue.input > 0
            ? messages.max
            : messages.min
          : messages.type,
    })
    .max(max, { error: messages.max, abort: true })
    .min(min, { error: messages.min, abort: true })
    .int({ error: messages.int });
}

const beyondJson = `expected at most ${MAX_WIRE_INTEGER} (2^53-1, the largest integer a JSON number carries exactly)`;

const term = (min: 0 | 1) =>
  wholeNumber(min, MAX_WIRE_INTEGER, {
    type: "expected a number",
    min: min === 1 ? "expected a term of at least 1" : "expected a non-negative whole number",
    max: beyondJson,
    int: "expected a whole number",
  }).meta({ description: "Fencing token: +1 each time leadership passes to a holder; kept by a release" });

const leaseMs = wholeNumber(MIN_LEASE_MS, MAX_LEASE_MS, {
  type: "expected a number of milliseconds",
  min: `expected at least ${MIN_LEASE_MS} ms`,
  max: `expected at most ${MAX_LEASE_MS} ms (24 h)`,
  int: "expected a whole number of milliseconds",
}).meta({ description: "How long the lease is valid after each renewal (ms)", example: 15000 });

const wallMs = (description: string) =>
  wholeNumber(0, MAX_WIRE_INTEGER, {
    type: "expected wall-clock milliseconds",
    min: "expected a non-negative number",
    max: beyondJson,
    int: "expected whole milliseconds",
  }).meta({ description });

// The same schema the record's validation uses (src/lease.ts): the published pattern is the
// enforced one, HOLDER_PATTERN; the description says what it means in words.
const holder = holderSchema.meta({
  description: `Identity of the holder: 1-${MAX_HOLDER_LENGTH} characters, no control characters (Unicode Cc)`,
  example: "billing-7f9c",
});

const metadata = metadataSchema.meta({
  description: `A small string map, at most ${MAX_METADATA_BYTES} bytes as UTF-8 JSON (rewritten on every renewal)`,
  example: { addr: "10.0.0.7:8080" },
});

/**
 * An entity tag as this API sends it in ETag and takes it in If-Match: one quoted revision,
 * printable ASCII except `"` (RFC 9110 etagc without obs-text), no `W/`, no list, no `*`.
 */
export const ENTITY_TAG_PATTERN = /^"([\x21\x23-\x7E]{1,64})"$/;
const entityTag = ENTITY_TAG_PATTERN.source;

/**
 * A lease name on the wire: the record's rule (NAME_PATTERN), with its length stated too (the
 * pattern implies it) and checked first, so an overlong name gets one message.
 */
const nameError = `expected 1-${MAX_NAME_LENGTH} characters of a-z 0-9 . _ / -, starting and ending with a letter or digit`;
const wireName = z
  .string({ error: "expected a string" })
  .min(1, { error: "expected a non-empty name", abort: true })
  .max(MAX_NAME_LENGTH, { error: `expected at most ${MAX_NAME_LENGTH} characters`, abort: true })
  .regex(NAME_PATTERN, { error: nameError });

export const leaseName = wireName.meta({
  description: `The lease name: 1-${MAX_NAME_LENGTH} characters of a-z 0-9 . _ / -, starting and ending with a letter or digit`,
  example: "adapters/billing",
});

export const NameParam = z.object({
  name: wireName.meta({
    param: {
      name: "name",
      in: "path",
      description: `The lease name, percent-encoded as one path segment: each "/" is sent as %2F, as RFC 3986 and OpenAPI's simple style encode a path parameter (adapters/billing is /v1/leases/adapters%2Fbilling)`,
    },
    example: "adapters/billing",
  }),
});

export const AcquireBody = z
  .strictObject({ holder, leaseMs, metadata: metadata.optional() })
  .meta({ id: "AcquireRequest", description: "Acquire (or, by the current holder, renew) a lease" });

export const TermBody = z
  .strictObject({ holder, term: term(1) })
  .meta({ id: "HolderTermRequest", description: "The holder and the term it holds" });

/**
 * The raw compare-and-swap write used by the HTTP store: the whole record but `renewedAt`, which
 * the server stamps with its own clock. `acquiredAt` is the writer's (informational).
 */
export const RecordBody = z
  .strictObject({
    holder: holder.nullable(),
    term: term(0),
    leaseMs,
    metadata,
    writeId: z
      .string({ error: "expected a string" })
      .min(1, { error: "expected a non-empty string" })
      .max(64, { error: "expected at most 64 characters" })
      .meta({ description: "A unique id of this write: tells whose write a record is" }),
    acquiredAt: wallMs("When the current term began (writer's wall clock, ms); at most the server's clock + maxSkewMs"),
  })
  .meta({
    id: "RecordWrite",
    description: "A whole lease record but renewedAt, which the server stamps; `holder: null` releases",
  });

export const ListQuery = z.object({
  prefix: prefixSchema.optional().meta({ description: "Only names starting with this", example: "adapters/" }),
  limit: z.coerce
    .number({ error: "expected a number" })
    .int({ error: "expected a whole number" })
    .min(1, { error: "expected at least 1" })
    .max(1000, { error: "expected at most 1000" })
    .optional()
    .meta({ description: "Page size (default 100; the server may cap it lower)" }),
  cursor: wireName.optional().meta({ description: "The `next` value of the previous page" }),
});

const revision = z.string().min(1).max(64).meta({ description: "Opaque compare-and-swap token (ETag, unquoted)" });

export const Lease = z
  .object({
    name: leaseName,
    holder: holder.nullable(),
    term: term(0),
    leaseMs,
    acquiredAt: wallMs("When the current term began (writer's wall clock, ms)"),
    renewedAt: wallMs("When this revision was written (server wall clock, ms)"),
    expiresAt: wallMs("renewedAt + leaseMs (server wall clock, ms)"),
    metadata,
    writeId: z.string().min(1).max(64),
    revision,
  })
  .meta({ id: "Lease", description: "One lease record and its revision" });

export const LeaseResult = z
  .object({ leader: z.boolean().meta({ description: "True when the caller holds the lease" }), lease: Lease })
  .meta({ id: "LeaseResult" });

export const LeaseList = z
  .object({
    leases: z.array(Lease),
    next: leaseName.nullable().meta({ description: "Cursor of the next page, or null on the last" }),
  })
  .meta({ id: "LeaseList" });

export const FieldError = z
  .object({
    path: z.string().meta({ description: 'The failing field, dotted ("metadata.addr"), or a header name' }),
    message: z.string().meta({ description: "What was expected" }),
  })
  .meta({ id: "FieldError" });

export const Problem = z
  .object({
    type: z.string().meta({ description: "urn:leasehold:problem:<kind>", example: "urn:leasehold:problem:conflict" }),
    title: z.string(),
    status: z.number().int().min(400).max(599),
    detail: z.string(),
    errors: z.array(FieldError).optional().meta({ description: "Each failing field (400)" }),
    // No .meta() on a component: it would make an unnamed copy, inlined instead of referenced.
    lease: Lease.optional(),
    leader: z.boolean().optional(),
    rule: z.string().optional().meta({
      description:
        "The term rule a refused write broke (409 term-rule): term-decreased, term-skipped, new-holder-needs-next-term, release-keeps-term or create-needs-term",
    }),
  })
  .meta({
    id: "Problem",
    description:
      "RFC 9457 problem details; `lease` is the current record (409, 412), `errors` each failing field (400)",
  });

/** The data of one watch event (`event: lease`, `id:` the revision or "none"). */
export const WatchEvent = z
  .object({
    lease: z.union([Lease, z.null()]),
    free: z.boolean().meta({ description: "Released, never created, or expired by the server's rule" }),
  })
  .meta({
    id: "WatchEvent",
    description: 'The JSON data of each "lease" event of a watch stream; `lease` is null when the lease never existed',
  });

export const Health = z.object({ ok: z.literal(true) }).meta({ id: "Health" });

/** What the raw OpenAPI parts of the document (headers, SSE) say, from the same sources as the checks. */
export const wirePatterns = { entityTag } as const;

export type LeaseView = z.infer<typeof Lease>;
export type LeaseResultView = z.infer<typeof LeaseResult>;
export type LeaseListView = z.infer<typeof LeaseList>;
export type ProblemView = z.infer<typeof Problem>;
export type RecordWrite = z.infer<typeof RecordBody>;
export type WatchEventView = z.infer<typeof WatchEvent>;
