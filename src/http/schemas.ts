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
  digestSchema,
  holderSchema,
  MAX_HOLDER_LENGTH,
  MAX_LEASE_MS,
  MAX_METADATA_BYTES,
  MAX_NAME_LENGTH,
  MIN_LEASE_MS,
  metadataSchema,
  NAME_PATTERN,
  NAME_RULE,
  PLAIN_TEXT_PATTERN,
  prefixSchema,
  RECORD_NAME_PATTERN,
  RECORD_NAME_RULE,
  RESERVED_METADATA_PREFIXES,
  releasesSchema,
  SERVED_NAME_PATTERN,
  SERVED_NAME_RULE,
} from "../lease.js";
import { MAX_BUCKETS } from "../sharding/bucket-of.js";
import { MAX_GROUP_LENGTH, MEMBER_ID_PATTERN } from "../sharding/layout.js";
import { PROBLEM_KIND_NAMES } from "./problem-kinds.js";

/** 2^53-1: beyond it a JSON number no longer names one integer (9007199254740993 reads as ...992). */
export const MAX_WIRE_INTEGER = Number.MAX_SAFE_INTEGER;

/**
 * A whole number within [min, max]. The bound is checked first and stops there, so a number
 * beyond 2^53-1 (which JSON cannot carry exactly) gets one clear message, not "not whole".
 */
/** A whole number in [min, max]; each message defaults to the plain one ("expected at least 1"). */
function wholeNumber(
  min: number,
  max: number,
  given: { type?: string; min?: string; max?: string; int?: string } = {},
) {
  const messages = {
    type: given.type ?? "expected a number",
    min: given.min ?? `expected at least ${min}`,
    max: given.max ?? `expected at most ${max}`,
    int: given.int ?? "expected a whole number",
  };
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
    min: min === 1 ? "expected a term of at least 1" : "expected a non-negative whole number",
    max: beyondJson,
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
  description: `Identity of the holder: 1-${MAX_HOLDER_LENGTH} characters, no control, format or line-separator characters (Unicode Cc, Cf, Zl, Zp)`,
  example: "billing-7f9c",
});

const metadata = metadataSchema.meta({
  description: `A small string map of the caller's own, at most ${MAX_METADATA_BYTES} bytes as UTF-8 JSON (rewritten on every renewal); keys starting with ${RESERVED_METADATA_PREFIXES.map((p) => `"${p}"`).join(" or ")} are refused: the protocol's state is the record's typed fields, never metadata`,
  example: { addr: "10.0.0.7:8080" },
  // What the superRefine enforces, for clients and tools that read the document (src/lease.ts).
  propertyNames: { type: "string", pattern: PLAIN_TEXT_PATTERN.source },
  additionalProperties: { type: "string", pattern: PLAIN_TEXT_PATTERN.source },
});

/**
 * A scheduled job's latest fire (docs/schedule.md): protocol state, written by the scheduler with
 * the record. The server refuses a write that moves it back or reopens a settled fire.
 */
const fire = z
  .strictObject({
    at: wallMs("The fire's scheduled instant (wall clock, ms since the epoch)"),
    done: z
      .boolean({ error: "expected true or false" })
      .meta({ description: "False while its run is under way (or its runner vanished); true once settled" }),
  })
  .meta({
    id: "Fire",
    description:
      "A scheduled job's latest fire: it never goes back, and a settled one is never reopened (409 term-rule fire-rewound, fire-reopened)",
  });

/** A process session record's count of leases it released or handed over (src/record.ts). */
const releases = releasesSchema.meta({
  description:
    "A process session record written straight to a store (never through this API, which refuses it): how many leases bound to this session term its holder released or handed over while keeping the session. Its followers read those leases when it changes; nothing is judged by it",
});

/**
 * The largest term a new lease may start at through the raw PUT: far beyond any real use, and
 * 2^52 short of 2^53-1, so a lease created there can still pass on (a term past 2^53-1 could not
 * be written, and the name would be stuck).
 */
export const MAX_CREATED_TERM = 2 ** 52;

/**
 * A process's own random id, picked once when it starts (a UUID) and sent with every call: the
 * server keeps only its SHA-256 digest, and renews, releases or re-acquires a lease (or a member's
 * session) only for the instance that took it, so two processes given the same holder name (or
 * member id) never share one term. At least 16 characters, so it is not guessable by accident.
 */
export const INSTANCE_PATTERN = /^[A-Za-z0-9._:-]{16,64}$/;
const instanceRule = "expected 16-64 characters of A-Z a-z 0-9 . _ : - (a random id, e.g. a UUID)";
const instanceDescription =
  "A random id this process picks once when it starts (a UUID, 16-64 characters) and sends with every call. The server keeps only its SHA-256 digest: it renews, releases or re-acquires only for the instance that took the lease (or started the session), so two processes given the same holder name or member id never share a term. Never share it, never log it";
const instance = z
  .string({ error: "expected a string" })
  .regex(INSTANCE_PATTERN, { error: instanceRule })
  .meta({ description: instanceDescription, example: "0b6f4c1e-7d2a-4a47-9a55-3f7e1a2c9d10" });

/** The raw PUT's header carrying the writer's instance (the HTTP store sends its own). */
export const INSTANCE_HEADER = "Leasehold-Instance";
/**
 * The client's own timeout for this request, in whole ms (docs/partitions.md, "No late effects"):
 * the server gives up on it at that point, and never writes for it after that.
 */
export const TIMEOUT_HEADER = "Leasehold-Timeout-Ms";
/** The largest Leasehold-Timeout-Ms the server takes (10 minutes). */
export const MAX_TIMEOUT_HEADER_MS = 600_000;
export const instanceHeaderDescription = `The writing process's instance (${instanceRule.slice(9)}): a write that keeps the holder (a renewal, a release, a re-acquisition) must come from the instance that took the lease`;

/**
 * An entity tag as this API sends it in ETag and takes it in If-Match: one quoted revision,
 * printable ASCII except `"` (RFC 9110 etagc without obs-text), no `W/`, no list, no `*`.
 */
export const ENTITY_TAG_PATTERN = /^"([\x21\x23-\x7E]{1,64})"$/;
const entityTag = ENTITY_TAG_PATTERN.source;

/**
 * A lease name on the wire: the record's rule (NAME_PATTERN), with its length stated and checked
 * first, so an overlong name gets one message.
 */
/** A name field of the wire: a non-empty string of at most MAX_NAME_LENGTH, matching `pattern`. */
const wireNameOf = (pattern: RegExp, rule: string) =>
  z
    .string({ error: "expected a string" })
    .min(1, { error: "expected a non-empty name", abort: true })
    .max(MAX_NAME_LENGTH, { error: `expected at most ${MAX_NAME_LENGTH} characters`, abort: true })
    .regex(pattern, { error: rule });

const wireName = wireNameOf(NAME_PATTERN, NAME_RULE);

const nameDescription = `1-${MAX_NAME_LENGTH} characters: "/"-separated segments of a-z 0-9 . _ -, each starting and ending with a letter or digit (no empty, "." or ".." segment)`;

export const leaseName = wireName.meta({
  description: `The lease name: ${nameDescription}`,
  example: "adapters/billing",
});

/**
 * Any record's name on the wire: a lease name, or a protocol record's (a process session's, a
 * sharded group's): what GET, listings and a bound lease's `session` may name.
 */
const wireRecordName = wireNameOf(SERVED_NAME_PATTERN, SERVED_NAME_RULE);

/**
 * A listing's position: the last name a page covered, which may be one of the server's own records
 * (a page counts them, though it never shows them), so any stored record's name.
 */
const listCursor = wireNameOf(RECORD_NAME_PATTERN, RECORD_NAME_RULE);

export const recordName = wireRecordName.meta({
  description: `A record's name: a lease name (${nameDescription}), or a protocol record's: [<scope>/]_sessions/<id> (a process session), <group>/_config, <group>/_members/<id>, <group>/_buckets/<index> (a sharded group)`,
  example: "adapters/billing",
});

const sessionRef = z
  .strictObject(
    {
      name: wireRecordName.meta({ description: "The process session record's name ([<scope>/]_sessions/<id>)" }),
      term: term(1).meta({ description: "The session's term the lease rides on" }),
    },
    { error: "expected { name, term }" },
  )
  .meta({
    id: "SessionRef",
    description:
      "A bound lease's process session tenure: the lease is held exactly while that session term is (docs/design.md §4). Written through the raw PUT only for a session record the writing instance holds",
  });

const successor = z
  .strictObject({ holder, session: sessionRef }, { error: "expected { holder, session: { name, term } }" })
  .meta({
    id: "Successor",
    description:
      "A candidate registered to be handed a bound lease at its holder's next graceful stop, in one write: an offer by another process, holding `session`",
  });

const upstream = z
  .strictObject(
    {
      holderDigest: digestSchema.optional().meta({ description: "The API above's holder proof (a digest)" }),
      successorDigest: digestSchema.optional().meta({ description: "The API above's successor proof (a digest)" }),
    },
    { error: "expected { holderDigest?, successorDigest? }" },
  )
  .meta({
    id: "UpstreamProof",
    description:
      "Set only by another leasehold API that keeps its leases here through the HTTP store: its own instance proofs, stored and shown back unchanged; this server never judges by them",
  });

export const NameParam = z.object({
  name: wireName.meta({
    param: {
      name: "name",
      in: "path",
      description: `The lease name (${nameDescription}), percent-encoded as one path segment: each "/" is sent as %2F, as RFC 3986 and OpenAPI's simple style encode a path parameter (adapters/billing is /v1/leases/adapters%2Fbilling)`,
    },
    example: "adapters/billing",
  }),
});

export const RecordNameParam = z.object({
  name: wireRecordName.meta({
    param: {
      name: "name",
      in: "path",
      description: `The record's name (a lease name, ${nameDescription}; or a protocol record's, [<scope>/]_sessions/<id>, <group>/_config, <group>/_members/<id>, <group>/_buckets/<index>), percent-encoded as one path segment: each "/" is sent as %2F (adapters/billing is /v1/leases/adapters%2Fbilling)`,
    },
    example: "adapters/billing",
  }),
});

export const AcquireBody = z.strictObject({ holder, instance, leaseMs, metadata: metadata.optional() }).meta({
  id: "AcquireRequest",
  description: "Acquire a lease (or, by the holder from the same instance, renew it)",
});

export const TermBody = z.strictObject({ holder, instance, term: term(1) }).meta({
  id: "HolderTermRequest",
  description: "The holder, the instance that took the lease, and the term it holds",
});

/**
 * The raw compare-and-swap write used by the HTTP store: the whole record but `renewedAt`, which
 * the server stamps with its own clock. `acquiredAt` is the writer's (informational).
 */
export const RecordBody = z
  .strictObject({
    holder: holder.nullable(),
    term: term(0).meta({
      description: `Fencing token: +1 each time leadership passes to a holder; kept by a release. A new lease starts at most at ${MAX_CREATED_TERM} (2^52)`,
    }),
    leaseMs,
    metadata,
    writeId: z
      .string({ error: "expected a string" })
      .min(1, { error: "expected a non-empty string" })
      .max(64, { error: "expected at most 64 characters" })
      .meta({ description: "A unique id of this write: tells whose write a record is" }),
    acquiredAt: wallMs("When the current term began (writer's wall clock, ms); at most the server's clock + maxSkewMs"),
    session: sessionRef.optional(),
    successor: successor.optional(),
    upstream: upstream.optional(),
    fire: fire.optional(),
  })
  .meta({
    id: "RecordWrite",
    description: "A whole lease record but renewedAt, which the server stamps; `holder: null` releases",
  });
export type RecordWrite = z.infer<typeof RecordBody>;

export const ForceReleaseBody = z
  .strictObject({
    term: term(0)
      .optional()
      .meta({
        description: `For a record the store cannot read (whose own term is unknown): the term the released record carries, at least the highest term anything downstream fenced with under this name (0 if nothing fences with it), at most ${MAX_CREATED_TERM}. A record that reads keeps its own term: send none, or that one`,
      }),
  })
  .meta({
    id: "ForceReleaseRequest",
    description: "Clear a record this server cannot read or judge: it becomes a released record (holder null)",
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
  cursor: listCursor.optional().meta({ description: "The `next` value of the previous page" }),
});

const revision = z.string().min(1).max(64).meta({ description: "Opaque compare-and-swap token (ETag, unquoted)" });

export const Lease = z
  .object({
    name: recordName,
    holder: holder.nullable(),
    term: term(0),
    leaseMs,
    acquiredAt: wallMs("When the current term began (writer's wall clock, ms)"),
    renewedAt: wallMs("When this revision was written (server wall clock, ms)"),
    expiresAt: wallMs(
      "When the lease runs out unless renewed (server wall clock, ms): renewedAt + leaseMs; for a bucket of a sharded group, when its owner's session does (a bucket is held while that session lives)",
    ),
    metadata,
    writeId: z.string().min(1).max(64),
    session: sessionRef.optional(),
    successor: successor.optional(),
    upstream: upstream.optional(),
    fire: fire.optional(),
    releases: releases.optional(),
    revision,
  })
  .meta({ id: "Lease", description: "One lease record and its revision" });
export type LeaseView = z.infer<typeof Lease>;

export const LeaseResult = z
  .object({ leader: z.boolean().meta({ description: "True when the caller holds the lease" }), lease: Lease })
  .meta({ id: "LeaseResult" });
export type LeaseResultView = z.infer<typeof LeaseResult>;

export const FieldError = z
  .object({
    path: z.string().meta({ description: 'The failing field, dotted ("metadata.addr"), or a header name' }),
    message: z.string().meta({ description: "What was expected" }),
  })
  .meta({ id: "FieldError" });

/** Every kind of problem the API answers (src/http/problem-kinds.ts): a component of its own, for clients. */
export const ProblemKind = z.enum(PROBLEM_KIND_NAMES).meta({
  id: "ProblemKind",
  description:
    "What went wrong: the last part of a problem's type, urn:leasehold:problem:<kind>. A client should expect kinds a newer server adds",
});
/**
 * A stored record this server cannot read (`corrupt`) or cannot judge (`unjudgeable`: it reads,
 * but what it names cannot be judged), listed in its place with why, so one bad record never fails
 * a page (docs/security.md). Its name is the store's key, which may predate today's name rule.
 */
export const UnreadableLease = z
  .object({
    name: z.string().min(1).max(MAX_NAME_LENGTH).meta({ description: "The name the store holds the record under" }),
    reason: z.enum(["corrupt", "unjudgeable"]).meta({
      description:
        "corrupt: the store cannot read the record (not JSON, a missing or mistyped field, foreign data); unjudgeable: it reads, but the server cannot judge whether it is held (it names a session that is not a lease name, or a record that is itself unreadable)",
    }),
    detail: z.string().meta({ description: "What is wrong, in words" }),
    errors: z.array(FieldError).meta({ description: "Each field that is not what leasehold writes" }),
  })
  .meta({
    id: "UnreadableLease",
    description:
      "A stored record this server cannot read or judge, listed in its place in name order with why. GET of it answers 500 corrupt; an operator clears it with forceReleaseLease (leasehold release --force)",
  });
export type UnreadableLeaseView = z.infer<typeof UnreadableLease>;

export const LeaseList = z
  .object({
    leases: z.array(Lease),
    unreadable: z.array(UnreadableLease).optional().meta({
      description:
        "The page's records this server cannot read or judge, each with its name and why; the rest of the page is in `leases`. Sent by every server since leasehold 0.2 (empty when none)",
    }),
    next: listCursor.nullable().meta({
      description: "Cursor of the next page (the last name of this page, of either kind), or null on the last",
    }),
  })
  .meta({ id: "LeaseList" });
export type LeaseListView = z.infer<typeof LeaseList>;

export const Problem = z
  .object({
    type: z.string().meta({
      description: "urn:leasehold:problem:<kind>, the kind one of ProblemKind",
      example: "urn:leasehold:problem:conflict",
    }),
    title: z.string(),
    status: z.number().int().min(400).max(599),
    detail: z.string(),
    errors: z.array(FieldError).optional().meta({ description: "Each failing field (400)" }),
    // No .meta() on a component: it would make an unnamed copy, inlined instead of referenced.
    lease: Lease.optional(),
    leader: z.boolean().optional(),
    rule: z.string().optional().meta({
      description:
        "The term rule a refused write broke (409 term-rule): term-decreased, term-skipped, new-holder-needs-next-term, release-keeps-term, create-needs-term, or for a scheduled job's record fire-rewound or fire-reopened",
    }),
    bound: z.string().optional().meta({
      description:
        "The bound a refused request is over (429 over-limit, 503 over-capacity): watchStreamsPerToken, watchStreams, recordsPerPrefix, createsPerMinute, maxConnections, maxConnectionsPerAddress, inFlight (requests in flight, a share reserved for current holders' renewals) or lateMs (the server is late: only current holders' renewals and member heartbeats are served)",
    }),
    freeInMs: z.number().int().min(0).optional().meta({
      description:
        "409 conflict of a lease still held by another holder: in how many milliseconds this server will consider it free (renewedAt + leaseMs + maxSkewMs by its clock, plus 1); Retry-After is this in whole seconds, rounded up",
    }),
    group: z.string().optional().meta({
      description: "The sharded group a refused write's record belongs to (409 group-record): use its group routes",
    }),
  })
  .meta({
    id: "Problem",
    description:
      "RFC 9457 problem details; `lease` is the current record (409, 412; only for a token that may read it), `errors` each failing field (400)",
  });
export type ProblemView = z.infer<typeof Problem>;

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
export type WatchEventView = z.infer<typeof WatchEvent>;

export const Health = z.object({ ok: z.literal(true) }).meta({ id: "Health" });
export const Ready = z.object({ ok: z.literal(true), store: z.literal("reachable") }).meta({ id: "Ready" });

// ---- sharded groups (docs/sharding.md, "Over HTTP") ----

/** A group name: the lease-name rule, short enough that every record name of the group fits. */
const wireGroup = z
  .string({ error: "expected a string" })
  .min(1, { error: "expected a non-empty group name", abort: true })
  .max(MAX_GROUP_LENGTH, { error: `expected at most ${MAX_GROUP_LENGTH} characters`, abort: true })
  .regex(NAME_PATTERN, { error: NAME_RULE.replace(`1-${MAX_NAME_LENGTH}`, `1-${MAX_GROUP_LENGTH}`) });

const wireMember = z
  .string({ error: "expected a string" })
  .min(1, { error: "expected a non-empty member id", abort: true })
  .max(64, { error: "expected at most 64 characters", abort: true })
  .regex(MEMBER_ID_PATTERN, {
    error: "expected 1-64 characters of a-z 0-9 . _ -, starting and ending with a letter or digit",
  });

export const MemberParams = z.object({
  group: wireGroup.meta({
    param: {
      name: "group",
      in: "path",
      description: `The group name (1-${MAX_GROUP_LENGTH} characters, the lease-name rule), percent-encoded as one path segment like a lease name (adapters/billing is adapters%2Fbilling). Its records are <group>/_config, <group>/_members/<id> and <group>/_buckets/<i>; the token must cover <group>/_members/<member> (a token whose prefix is exactly that acts for that member alone)`,
    },
    example: "adapters/billing",
  }),
  member: wireMember.meta({
    param: {
      name: "member",
      in: "path",
      description:
        "The member id, unique in the group and stable across restarts (a pod or host name): 1-64 characters of a-z 0-9 . _ -",
    },
    example: "billing-0",
  }),
});

const sessionTerm = term(1).meta({
  description: "The member's session number: +1 for every new session of this member id",
});

const bucketIndex = wholeNumber(0, MAX_BUCKETS - 1, {
  type: "expected a bucket number",
  min: "expected a bucket number of at least 0",
  max: `expected a bucket number below ${MAX_BUCKETS}`,
}).meta({ description: "A bucket index, 0 to N - 1" });

const bucketTerm = term(1).meta({
  description:
    "The bucket's fencing token: +1 on every change of owner or session; send it with every write for the bucket's keys",
});

export const HeartbeatBody = z
  .strictObject({
    instance,
    session: sessionTerm.optional().meta({
      description:
        "The session this process holds, from the last heartbeat's answer. Send it only while that session's window (`sentAt + leaseMs - safetyMs` of the last heartbeat whose answer you acted on) is still open; otherwise omit it to start the next session",
    }),
    ended: sessionTerm.optional().meta({
      description:
        "With a start (no `session`): the newest session this process worked under (all its work has stopped). The server starts the next session on top of it; omit it when this process never had a session. Sent with `session`, it is ignored when older than `session`, and makes the call a start when not (that session has ended for the member)",
    }),
    leaseMs: leaseMs.meta({
      description:
        "How long the session is valid after each heartbeat (ms). Stop all work at your own monotonic clock's `sentAt + leaseMs - safetyMs`",
      example: 15000,
    }),
    buckets: wholeNumber(1, MAX_BUCKETS, {
      type: "expected a number of buckets",
      min: "expected at least 1 bucket",
      max: `expected at most ${MAX_BUCKETS} buckets`,
    })
      .optional()
      .meta({
        description:
          "The bucket count a new group starts with; an existing group keeps its own (changing it is `reshard`)",
        example: 16,
      }),
  })
  .meta({
    id: "HeartbeatRequest",
    description: "Renew (or start) this member's session and learn what it holds and what it is asked to give up",
  });
export type HeartbeatRequest = z.infer<typeof HeartbeatBody>;

export const HandoffBody = z
  .strictObject({
    instance,
    session: sessionTerm,
    bucket: bucketIndex,
    term: bucketTerm,
  })
  .meta({
    id: "HandoffConfirmation",
    description:
      "The work on `bucket` at `term` has stopped (it was in `handoffs`): the server moves the bucket on with term + 1",
  });
export type HandoffConfirmation = z.infer<typeof HandoffBody>;

export const LeaveBody = z.strictObject({ instance, session: sessionTerm }).meta({
  id: "LeaveRequest",
  description: "All work of this session has stopped: end the session, freeing every bucket it held",
});
export type LeaveRequest = z.infer<typeof LeaveBody>;

const memberId = wireMember.meta({ description: "A member id" });
const groupName = wireGroup.meta({ description: "The group", example: "adapters/billing" });

export const HeldBucket = z
  .object({ bucket: bucketIndex, term: bucketTerm })
  .meta({ id: "HeldBucket", description: "A bucket this member may work on, with its fencing token" });

export const AskedHandoff = z
  .object({
    bucket: bucketIndex,
    term: bucketTerm,
    to: memberId
      .nullable()
      .meta({ description: "The member the bucket goes to, or null when it is released (the bucket count changed)" }),
    reason: z.enum(["handoff", "resharded"]).meta({
      description: "handoff: the balanced assignment gives it to `to`; resharded: the bucket count changed",
    }),
  })
  .meta({
    id: "AskedHandoff",
    description: "A bucket this member still holds and must give up: stop its work, then confirm (confirmHandoff)",
  });

export const Heartbeat = z
  .object({
    group: groupName,
    member: memberId,
    session: sessionTerm,
    leaseMs,
    buckets: wholeNumber(1, MAX_BUCKETS).meta({
      description: "The group's bucket count N: a key belongs to bucketOf(key, N)",
    }),
    epoch: term(1).meta({ description: "The config epoch: +1 each time the bucket count changes" }),
    held: z.array(HeldBucket).meta({
      description:
        "Work on exactly these buckets, each with its term, until sentAt + leaseMs - safetyMs on your monotonic clock (sentAt: when you sent this heartbeat); anything not listed, stop",
    }),
    handoffs: z.array(AskedHandoff).meta({
      description: "Buckets to stop working on now; confirm each (confirmHandoff) once its work has stopped",
    }),
    members: z.array(memberId).meta({ description: "The live members the assignment is computed over" }),
    unowned: wholeNumber(0, MAX_BUCKETS).meta({
      description: "Buckets nobody is working on, as this server sees the group",
    }),
    settled: z.boolean().meta({
      description:
        "Every bucket is owned as the balanced assignment says and nothing is moving: heartbeat every renewal interval; while false, sooner (the retry interval)",
    }),
  })
  .meta({ id: "Heartbeat", description: "What a member holds and is asked to give up, after its session was renewed" });
export type HeartbeatView = z.infer<typeof Heartbeat>;

export const HandoffResult = z
  .object({
    bucket: bucketIndex,
    outcome: z.enum(["transferred", "released", "kept"]).meta({
      description:
        "transferred: given to `holder`; released: free for its next owner; kept: the assignment gives it back to you at a new term (listed in `held` by the next heartbeat)",
    }),
    holder: memberId.nullable().meta({ description: "Who holds the bucket now (null: free)" }),
    term: term(0).meta({ description: "The bucket's term now" }),
  })
  .meta({ id: "HandoffResult", description: "Where the bucket went" });
export type HandoffResultView = z.infer<typeof HandoffResult>;

export const MemberLeft = z
  .object({ group: groupName, member: memberId, session: sessionTerm })
  .meta({ id: "MemberLeft", description: "The session ended: every bucket it held is free for the others" });
export type MemberLeftView = z.infer<typeof MemberLeft>;

/** What the raw OpenAPI parts of the document (headers, SSE) say, from the same sources as the checks. */
export const wirePatterns = { entityTag, instance: INSTANCE_PATTERN.source } as const;
