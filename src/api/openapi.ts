/**
 * The OpenAPI 3.1 contract of the API (docs/design.md §5): every route the server serves, with its
 * operationId, parameters, headers, statuses and media types, built from the wire schemas of
 * src/http/schemas.ts so the document and the server's validation are one set of rules.
 *
 * The document describes the server it is served by: with tokens, every /v1 operation requires
 * the bearer scheme and may answer 401 and 403; without (loopback, no auth) no operation declares
 * security and none answers 401 or 403. The service routes never require a token.
 */
import { createRoute, OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { z } from "zod";
import {
  AcquireBody,
  ForceReleaseBody,
  HandoffBody,
  HandoffResult,
  Health,
  Heartbeat,
  HeartbeatBody,
  INSTANCE_HEADER,
  instanceHeaderDescription,
  LeaseList,
  LeaseResult,
  Lease as LeaseSchema,
  LeaveBody,
  ListQuery,
  MemberLeft,
  MemberParams,
  NameParam,
  Problem,
  ProblemKind,
  Ready,
  RecordBody,
  RecordNameParam,
  TermBody,
  WatchEvent,
  wirePatterns,
} from "../http/schemas.js";
import { PROBLEM_TYPE } from "./problems.js";

export const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { "application/json": { schema } },
  description,
});

type HeaderObjects = Record<string, { description: string; required: boolean; schema: Record<string, unknown> }>;

export const problem = (description: string, headers?: HeaderObjects) => ({
  content: { [PROBLEM_TYPE]: { schema: Problem } },
  description,
  ...(headers ? { headers } : {}),
});

const body = <T extends z.ZodType>(schema: T) => ({
  body: {
    description: "JSON that is also I-JSON (RFC 7493): a string with an unpaired surrogate is refused (400)",
    content: { "application/json": { schema } },
    required: true,
  },
});

const etag: HeaderObjects = {
  ETag: {
    description: 'The revision, quoted ("7"): send it back as If-Match to replace exactly this revision',
    required: true,
    schema: { type: "string", pattern: wirePatterns.entityTag },
  },
};

const retryAfter: HeaderObjects = {
  "Retry-After": {
    description: "Seconds to wait before retrying",
    required: true,
    schema: { type: "integer", minimum: 0 },
  },
};

export const ALLOW_HEADER: HeaderObjects = {
  Allow: {
    description: "The methods this path supports (RFC 9110 §10.2.1)",
    required: true,
    schema: { type: "string", example: "GET, HEAD, PUT" },
  },
};

/** Retry-After on a 409 that will pass by itself (a lease still held: when the server expects it free). */
const maybeRetryAfter: HeaderObjects = {
  "Retry-After": {
    description: "Seconds until the server expects the lease to be free (a lease still held)",
    required: false,
    schema: { type: "integer", minimum: 0 },
  },
};

const instanceHeader = {
  name: INSTANCE_HEADER,
  in: "header" as const,
  required: true,
  description: instanceHeaderDescription,
  schema: { type: "string" as const, pattern: wirePatterns.instance },
};

const ifMatch = {
  name: "If-Match",
  in: "header" as const,
  required: false,
  description:
    "Replace the lease only at this revision: the ETag a read or write returned. Send exactly one of If-Match and If-None-Match; neither is 428",
  schema: { type: "string" as const, pattern: wirePatterns.entityTag },
};

const ifNoneMatch = {
  name: "If-None-Match",
  in: "header" as const,
  required: false,
  description: "`*`: create the lease only if it does not exist. Send exactly one of If-Match and If-None-Match",
  schema: { type: "string" as const, enum: ["*"] },
};

const lastEventId = {
  name: "Last-Event-ID",
  in: "header" as const,
  required: false,
  description:
    "The id (revision) of the last event received, when resuming: the current state is not sent again if it is still that revision and still held",
  schema: { type: "string" as const },
};

/**
 * The SSE stream of a watch: `event: lease` messages, `id: <revision or "none">`, JSON data; and,
 * where the runtime stops every request at a deadline (a Lambda invocation), one `event: end`
 * just before it, after which the client resumes at once with Last-Event-ID.
 */
const watchStream = {
  description:
    'One "lease" event with the current state, then one per change this server makes or sees, and one when the lease expires unrenewed; keep-alive comments in between. Each "lease" event\'s data is a WatchEvent (JSON). Where the runtime ends every request at a deadline (AWS Lambda: the function\'s timeout), the stream sends one "end" event just before it and closes: reconnect at once with Last-Event-ID, and nothing is missed',
  content: {
    "text/event-stream": {
      // As OpenAPI 3.2's itemSchema and Schemathesis read it: the schema of one event.
      schema: {
        oneOf: [
          {
            type: "object" as const,
            required: ["event", "data"],
            properties: {
              event: { type: "string" as const, enum: ["lease"] },
              id: { type: "string" as const, description: 'The revision, or "none" when the lease never existed' },
              data: {
                type: "string" as const,
                contentMediaType: "application/json",
                contentSchema: { $ref: "#/components/schemas/WatchEvent" },
              },
              retry: { type: "integer" as const, minimum: 0 },
            },
          },
          {
            type: "object" as const,
            required: ["event", "data"],
            properties: {
              event: { type: "string" as const, enum: ["end"] },
              data: {
                type: "string" as const,
                contentMediaType: "application/json",
                contentSchema: {
                  type: "object" as const,
                  required: ["reason"],
                  properties: {
                    reason: {
                      type: "string" as const,
                      description: "Why the server ends the stream, for logs: resume with Last-Event-ID",
                    },
                  },
                },
              },
            },
          },
        ],
      },
    },
  },
};

/**
 * What every operation of a server that requires tokens (`secured`) or not shares: its security
 * requirement (`security` for /v1, `open` for the service routes) and the answers any /v1 route
 * may give (401/403 with tokens, 400, 500, 503), a bound's 429 and a stream's refusals.
 */
export function commonParts(secured: boolean) {
  const security = secured ? { security: [{ bearer: [] }] } : {};
  const open = secured ? { security: [] } : {};
  const auth = secured
    ? {
        401: problem("Missing or unknown bearer token (the scheme is case-insensitive)", {
          "WWW-Authenticate": {
            description: "The scheme to authenticate with",
            required: true,
            schema: { type: "string", example: 'Bearer realm="leasehold"' },
          },
        }),
        403: problem("The token may not do this verb on this lease (its verbs or name prefixes)"),
      }
    : {};
  const overLimit = (what: string) => ({
    429: problem(`Over a bound of this server (\`bound\` names it: ${what}); retry after Retry-After`, retryAfter),
  });
  // 503: the store, or admission (src/api/admission.ts), which answers before anything is done
  // and serves current holders first: how it treats a route is said on the route.
  const unreadable = problem("A stored record is unreadable (corrupt, named in `detail`) or an unexpected error");
  const store503 = "Store unavailable, or a write's outcome unknown (retry after Retry-After)";
  const shed =
    "`over-capacity`, answered before anything is done: `bound` lateMs (this server is late, and serves current holders' renewals and member heartbeats first) or inFlight (it serves as many requests at once as it does but for the share reserved for them); retry after Retry-After";
  const failuresWith = (admission: string) => ({
    500: unreadable,
    503: problem(`${store503}; or ${admission}`, retryAfter),
  });
  /** A request admission sheds first: acquisitions, reads, lists. */
  const failures = failuresWith(shed);
  /** What only a current holder sends: refused by admission only when every request slot is in use. */
  const holderFailures = failuresWith(
    "`over-capacity` with `bound` inFlight, only when every request this server serves at once is in flight, the share reserved for current holders included",
  );
  /** Acquire and the raw PUT: a current holder's renewal is served on the reserved share, anything else is shed. */
  const renewalOrShed = failuresWith(
    `${shed}. Not when it is the current holder's own renewal (or release), which is served on the reserved share`,
  );
  const heartbeatFailures = failuresWith(
    `with \`session\` (a renewal): as for renew, \`over-capacity\` only when every request slot is in use; without (a new session): ${shed}`,
  );
  const invalid = problem("Invalid name, body, query or header: `errors` lists each failing field");
  // What a stream may answer instead of opening: its caller's bound, the server's, or the store.
  const streamBounds = {
    ...overLimit("watchStreamsPerToken"),
    500: failures[500],
    503: problem(
      `Store unavailable (retry after Retry-After), or \`over-capacity\`: this server serves watchStreams streams already (\`bound\`), or ${shed}`,
      retryAfter,
    ),
  };
  const lanes = { holder: holderFailures, renewal: renewalOrShed, heartbeat: heartbeatFailures };
  return { security, open, auth, failures, lanes, invalid, overLimit, streamBounds };
}

/** The routes and their documentation, for a server that requires tokens (`secured`) or not. */
export function apiRoutes(secured: boolean) {
  const { security, open, auth, failures, lanes, invalid, overLimit, streamBounds } = commonParts(secured);
  const withBody = {
    413: problem("Request body larger than the server's limit (4096 bytes by default)"),
    415: problem("Body is not Content-Type: application/json"),
  };
  const leaseWithTag = (description: string) => ({ ...json(LeaseSchema, description), headers: etag });
  const resultWithTag = (description: string) => ({ ...json(LeaseResult, description), headers: etag });
  const name = "$request.path.name";
  const group = "$request.path.group";
  const member = "$request.path.member";
  const holderTerm = {
    holder: "$request.body#/holder",
    instance: "$request.body#/instance",
    term: "$response.body#/lease/term",
  };
  /** The links from a lease answer to what a caller does next with it, each defined once. */
  const LINKS = {
    renew: { operationId: "renewLease", parameters: { name }, requestBody: holderTerm },
    release: { operationId: "releaseLease", parameters: { name }, requestBody: holderTerm },
    read: { operationId: "getLease", parameters: { name } },
    watch: { operationId: "watchLease", parameters: { name } },
    replace: { operationId: "putLease", parameters: { name, "header.If-Match": "$response.header.ETag" } },
  };
  const linksTo = (...next: Array<keyof typeof LINKS>) => ({
    links: Object.fromEntries(next.map((op) => [op, LINKS[op]])),
  });
  const heldElsewhere =
    "`holder-in-use`: the lease (this holder name) is held by another process (instance); `group-record`: the name is a record of a sharded group (`group` names it; use its group routes); `protocol-record`: the name is a process session record";

  return {
    acquire: createRoute({
      method: "post",
      path: "/v1/leases/{name}/acquire",
      operationId: "acquireLease",
      tags: ["leases"],
      summary: "Acquire when free or expired; the current holder calling it again renews",
      ...security,
      request: { params: NameParam, ...body(AcquireBody) },
      responses: {
        200: {
          ...resultWithTag("This holder leads: `lease.term` is its fencing token"),
          ...linksTo("renew", "release", "read", "watch"),
        },
        400: invalid,
        ...auth,
        409: problem(
          `\`conflict\`: held by another holder (Retry-After: when the server expects it free; \`lease\` is the current record for a token that may read it, \`leader: false\`); ${heldElsewhere}; \`term-exhausted\`: the lease is at term 2^53-1; \`term-rule\`: the write would break a term rule (\`rule\`)`,
          maybeRetryAfter,
        ),
        ...withBody,
        ...overLimit("recordsPerPrefix or createsPerMinute, for a new lease"),
        ...lanes.renewal,
      },
    }),
    renew: createRoute({
      method: "post",
      path: "/v1/leases/{name}/renew",
      operationId: "renewLease",
      tags: ["leases"],
      summary: "Renew a held lease",
      ...security,
      request: { params: NameParam, ...body(TermBody) },
      responses: {
        200: { ...resultWithTag("Renewed"), ...linksTo("release", "read") },
        400: invalid,
        ...auth,
        404: problem("The lease never existed"),
        409: problem(
          `\`conflict\`: lost (another holder, the term moved on, or it expired; \`lease\` is the current record for a token that may read it); ${heldElsewhere}`,
        ),
        ...withBody,
        ...lanes.holder,
      },
    }),
    release: createRoute({
      method: "post",
      path: "/v1/leases/{name}/release",
      operationId: "releaseLease",
      tags: ["leases"],
      summary: "Release (idempotent for the same holder and term); the term is kept",
      ...security,
      request: { params: NameParam, ...body(TermBody) },
      responses: {
        200: { ...resultWithTag("Released (or already released at this term)"), ...linksTo("read") },
        400: invalid,
        ...auth,
        404: problem("The lease never existed"),
        409: problem(
          `\`conflict\`: not this holder's term, or released by another process (\`lease\` is the current record for a token that may read it); ${heldElsewhere}`,
        ),
        ...withBody,
        ...lanes.holder,
      },
    }),
    forceRelease: createRoute({
      method: "post",
      path: "/v1/leases/{name}/force-release",
      operationId: "forceReleaseLease",
      tags: ["leases"],
      summary:
        "Clear a stored record this server cannot read or judge (the token needs the verb force): it becomes released",
      description: [
        "What `leasehold release --force NAME` sends. A record that reads but cannot be judged keeps its term and",
        "loses its metadata; a record the store cannot read is replaced, at the revision the store reported for it,",
        "by a released record at the `term` the request names. Logged with the token's name and what was wrong.",
        "A record that reads and is judged is refused (409 `not-corrupt`): its holder releases it, or it expires.",
      ].join(" "),
      ...security,
      request: { params: RecordNameParam, ...body(ForceReleaseBody) },
      responses: {
        200: {
          ...resultWithTag("Cleared: the released record"),
          links: { read: { operationId: "getLease", parameters: { name } } },
        },
        400: invalid,
        ...auth,
        404: problem("The lease never existed"),
        409: problem(
          "`not-corrupt`: the record reads and is judged (nothing to clear; `lease` is the record); `conflict`: the store could read neither the record nor its revision, so only its own tools can remove it",
        ),
        412: problem("The record changed while it was being cleared: nothing was written"),
        ...withBody,
        ...failures,
      },
    }),
    get: createRoute({
      method: "get",
      path: "/v1/leases/{name}",
      operationId: "getLease",
      tags: ["leases"],
      summary: "Read one lease (strongly consistent)",
      ...security,
      request: { params: RecordNameParam },
      responses: {
        200: { ...leaseWithTag("The lease; ETag is its revision"), ...linksTo("replace") },
        400: invalid,
        ...auth,
        404: problem("The lease never existed"),
        ...failures,
      },
    }),
    put: createRoute({
      method: "put",
      path: "/v1/leases/{name}",
      operationId: "putLease",
      tags: ["leases"],
      summary:
        "Raw compare-and-swap (what the HTTP store uses; the token needs the verb cas): If-Match replaces a revision, If-None-Match: * creates",
      description: [
        "The holding rules of the plain routes hold here too: a write that keeps the holder (a renewal, a release,",
        `a re-acquisition at term + 1) must come from the instance (${INSTANCE_HEADER}) that took the lease; a lease still`,
        "held (renewedAt + leaseMs + maxSkewMs not yet passed on the server's clock) is never given to another holder, nor to",
        "the same holder name from another instance; a record of a sharded group is written only by its group routes.",
      ].join(" "),
      ...security,
      parameters: [ifMatch, ifNoneMatch, instanceHeader],
      request: { params: RecordNameParam, ...body(RecordBody) },
      responses: {
        200: { ...leaseWithTag("Replaced"), ...linksTo("read") },
        201: { ...leaseWithTag("Created"), ...linksTo("read") },
        400: invalid,
        ...auth,
        409: problem(
          `\`term-rule\`: the write breaks a term rule (\`rule\` names it); \`conflict\`: the lease is still held by another holder (Retry-After: when the server expects it free) or expired in this term; ${heldElsewhere}; \`protocol-field\`: a \`session\` or \`successor\` the writing process does not hold (a lease binds only to a live process session of the writer's own, inside its token's prefixes; a successor only by a write that changes nothing else, from a process other than the holder's, naming another holder; \`errors\` names the field). \`lease\` is the current record for a token that may read it; nothing was written`,
          maybeRetryAfter,
        ),
        412: problem("Not at that revision, or it exists (If-None-Match: *): `lease` is the current record"),
        ...withBody,
        428: problem("Neither If-Match nor If-None-Match was sent"),
        ...overLimit("recordsPerPrefix or createsPerMinute, for a new lease"),
        ...lanes.renewal,
      },
    }),
    list: createRoute({
      method: "get",
      path: "/v1/leases",
      operationId: "listLeases",
      tags: ["leases"],
      summary: "List leases by name prefix, in name order",
      ...security,
      request: { query: ListQuery },
      responses: {
        200: json(LeaseList, "One page; `next` is the cursor of the next"),
        400: invalid,
        ...auth,
        404: problem("This server's store cannot list leases"),
        ...failures,
      },
    }),
    watch: {
      method: "get",
      path: "/v1/leases/{name}/watch",
      operationId: "watchLease",
      tags: ["leases"],
      summary: "Follow one lease as Server-Sent Events",
      ...security,
      parameters: [lastEventId],
      request: { params: RecordNameParam },
      responses: {
        200: watchStream,
        400: invalid,
        ...auth,
        ...streamBounds,
        501: problem(
          "`streaming-unavailable`: this deployment answers buffered (a Lambda function behind API Gateway's HTTP API, or its Function URL in BUFFERED mode); the detail says how to enable streams",
        ),
      },
    } satisfies RouteConfig,
    heartbeat: createRoute({
      method: "post",
      path: "/v1/groups/{group}/members/{member}/heartbeat",
      operationId: "heartbeatMember",
      tags: ["sharding"],
      summary:
        "Renew (or start) a member's session in a sharded group: the buckets it may work on, each with its term, and the hand-offs asked of it",
      description: [
        "The member sends this every renewal interval (leaseMs / 3), sooner while `settled` is false.",
        "Safety rests on the member's own clock: it notes `sentAt` (its monotonic clock) before sending, works on `held` only",
        "until `sentAt + leaseMs - safetyMs`, and stops every bucket at that instant unless a later heartbeat succeeded;",
        "never from the server's timestamps. A bucket in `handoffs` is stopped at once and confirmed with confirmHandoff.",
        "The token's prefixes must cover the member's record `<group>/_members/<member>`: a token scoped to exactly that",
        "name acts for that member alone. The member proves it runs the session by its `instance` (only its digest is kept).",
      ].join(" "),
      ...security,
      request: { params: MemberParams, ...body(HeartbeatBody) },
      responses: {
        200: {
          ...json(Heartbeat, "The session is renewed (or started): work on `held` until your own deadline"),
          links: {
            renew: {
              operationId: "heartbeatMember",
              parameters: { group, member },
              requestBody: {
                instance: "$request.body#/instance",
                session: "$response.body#/session",
                leaseMs: "$request.body#/leaseMs",
              },
            },
            // A member may give up a bucket it holds on its own too: the server decides where it goes.
            confirm: {
              operationId: "confirmHandoff",
              parameters: { group, member },
              requestBody: {
                instance: "$request.body#/instance",
                session: "$response.body#/session",
                bucket: "$response.body#/held/0/bucket",
                term: "$response.body#/held/0/term",
              },
            },
            leave: {
              operationId: "leaveGroup",
              parameters: { group, member },
              requestBody: { instance: "$request.body#/instance", session: "$response.body#/session" },
            },
          },
        },
        400: invalid,
        ...auth,
        404: problem("The group does not exist and the request has no `buckets` to start it with"),
        409: problem(
          "`session-ended`: the session named is over (expired, fenced, left or replaced): stop all work, then heartbeat without `session`; `member-in-use`: another process holds a live session under this member id; `not-a-group`: `<group>/_config` is another kind of record; `group-full`: a new member of a group that has 4096 members",
        ),
        ...withBody,
        ...overLimit("recordsPerPrefix or createsPerMinute, for a new group or member"),
        ...lanes.heartbeat,
      },
    }),
    handoff: createRoute({
      method: "post",
      path: "/v1/groups/{group}/members/{member}/handoff",
      operationId: "confirmHandoff",
      tags: ["sharding"],
      summary:
        "Confirm that a member's work on a bucket it was asked to give up has stopped: the bucket moves on with term + 1",
      ...security,
      request: { params: MemberParams, ...body(HandoffBody) },
      responses: {
        200: json(HandoffResult, "Where the bucket went"),
        400: invalid,
        ...auth,
        404: problem("The group does not exist"),
        409: problem(
          "`bucket-not-held`: the member does not hold the bucket at that term (already moved on); `session-ended`, `member-in-use` or `not-a-group` as for heartbeatMember",
        ),
        ...withBody,
        ...lanes.holder,
      },
    }),
    leave: createRoute({
      method: "post",
      path: "/v1/groups/{group}/members/{member}/leave",
      operationId: "leaveGroup",
      tags: ["sharding"],
      summary:
        "End a member's session once all its work has stopped (graceful leave): every bucket it held is free at once (idempotent)",
      ...security,
      request: { params: MemberParams, ...body(LeaveBody) },
      responses: {
        200: json(MemberLeft, "The session is over (or already was, left by this call or an earlier one)"),
        400: invalid,
        ...auth,
        409: problem("`session-ended` or `member-in-use` as for heartbeatMember"),
        ...withBody,
        ...lanes.holder,
      },
    }),
    health: {
      method: "get",
      path: "/healthz",
      operationId: "health",
      tags: ["service"],
      summary: "Liveness: the process serves requests (the store is not called)",
      ...open,
      responses: { 200: json(Health, "Serving") },
    } satisfies RouteConfig,
    ready: {
      method: "get",
      path: "/readyz",
      operationId: "ready",
      tags: ["service"],
      summary:
        "Readiness: the store answered within LEASEHOLD_STORE_TIMEOUT_MS (lately, or to a read made now); 503 while it cannot be reached",
      ...open,
      responses: {
        200: json(Ready, "Serving, and the store answers"),
        503: problem("`store-unavailable`: the store did not answer in time (retry after Retry-After)", retryAfter),
      },
    } satisfies RouteConfig,
    metrics: {
      method: "get",
      path: "/metrics",
      operationId: "metrics",
      tags: ["service"],
      summary: "Prometheus metrics of this instance (with tokens: for a token with the verb metrics)",
      ...security,
      responses: {
        200: {
          description: "Prometheus text exposition 0.0.4",
          content: { "text/plain": { schema: { type: "string" } } },
        },
        ...auth,
      },
    } satisfies RouteConfig,
    openapi: {
      method: "get",
      path: "/openapi.json",
      operationId: "openapiDocument",
      tags: ["service"],
      summary: "This document",
      ...open,
      responses: {
        200: { description: "OpenAPI 3.1", content: { "application/json": { schema: { type: "object" } } } },
      },
    } satisfies RouteConfig,
  };
}

/** The document's own parts that no route carries: info, the security scheme, the 405 answer. */
export function documentParts(secured: boolean) {
  const auth = secured
    ? 'Every /v1 operation and /metrics need `Authorization: Bearer <token>`; tokens are scoped to verbs (read; write: acquire, renew, release and the group routes; cas: the raw PUT; metrics) and to name prefixes: "" covers every name, a prefix ending in / the names under it, any other prefix that name and the names under it (adapters/bill never covers adapters/billboard).'
    : "This server runs without authentication (loopback or explicitly insecure): no operation needs a token. On loopback it serves only requests whose Host is localhost, 127.x.x.x or [::1] (403 otherwise).";
  return {
    info: {
      title: "leasehold",
      version: "2",
      description: [
        "Leader election leases over compare-and-swap storage, with fencing tokens (`term`).",
        auth,
        "Lease names contain `/`: in paths they are percent-encoded as one segment (`/v1/leases/adapters%2Fbilling`).",
        "Errors are RFC 9457 problem details (`application/problem+json`). A method a path does not list is answered",
        "405 with `Allow` (components/responses/MethodNotAllowed); HEAD is served wherever GET is.",
      ].join(" "),
    },
    securitySchemes: secured
      ? {
          bearer: {
            type: "http" as const,
            scheme: "bearer",
            description: "A token from LEASEHOLD_TOKENS; the scheme name is case-insensitive",
          },
        }
      : undefined,
    methodNotAllowed: {
      description: "The path exists, the method does not: `Allow` lists the methods it supports",
      headers: ALLOW_HEADER,
      content: { [PROBLEM_TYPE]: { schema: { $ref: "#/components/schemas/Problem" } } },
    },
    /** Components that only raw parts of the document reference (the SSE event's contentSchema). */
    schemas: { WatchEvent, ProblemKind },
  };
}

type Document = ReturnType<OpenAPIHono["getOpenAPI31Document"]>;

/**
 * Adds zod schemas that no route references directly to the document's components, converted by
 * the same generator (through a scratch app, the generator's public entry), so their references
 * to other components (WatchEvent's Lease) read the same as everywhere else.
 */
export function withSchemas(document: Document, schemas: Record<string, z.ZodType>): Document {
  const scratch = new OpenAPIHono();
  for (const [name, schema] of Object.entries(schemas)) {
    scratch.openAPIRegistry.registerPath({
      method: "get",
      path: `/${name}`,
      responses: { 200: { description: name, content: { "application/json": { schema } } } },
    });
  }
  const converted = scratch.getOpenAPI31Document({ openapi: "3.1.0", info: { title: "", version: "" } });
  const components = document.components ?? {};
  const own = { ...components.schemas };
  for (const name of Object.keys(schemas)) {
    const schema = converted.components?.schemas?.[name];
    if (!schema)
      throw new Error(`the OpenAPI generator produced no component ${name}: does its zod schema carry meta id?`);
    own[name] = schema;
  }
  return { ...document, components: { ...components, schemas: own } };
}
