/**
 * The OpenAPI description of the console's routes (docs/console.md), from the zod schemas of
 * ./wire.ts and the parts every route shares (../openapi.ts). Read-only: every /v1 route here needs
 * the `read` verb on what it shows, like GET.
 */
import { createRoute, type RouteConfig } from "@hono/zod-openapi";
import { ListQuery, MemberParams, RecordNameParam } from "../../http/schemas.js";
import { commonParts, json, problem } from "../openapi.js";
import { LeaseHistory } from "./wire.js";

/** A stream of several event types: each event's data is the JSON of the component it names. */
function eventStream(description: string, events: Record<string, string>) {
  return {
    description,
    content: {
      "text/event-stream": {
        // As OpenAPI 3.2's itemSchema and Schemathesis read it: the schema of one event.
        schema: {
          oneOf: Object.entries(events).map(([event, component]) => ({
            type: "object" as const,
            required: ["event", "data"],
            properties: {
              event: { type: "string" as const, enum: [event] },
              data: {
                type: "string" as const,
                contentMediaType: "application/json",
                contentSchema: { $ref: `#/components/schemas/${component}` },
              },
            },
          })),
        },
      },
    },
  };
}

const page = (type: string, description: string) => ({
  description,
  content: { [type]: { schema: { type: "string" as const } } },
});

export function consoleRoutes(secured: boolean) {
  const { security, open, auth, failures, invalid, streamBounds } = commonParts(secured);
  // What either stream may answer besides its events: as a lease's watch does, and 404.
  const streamFailures = {
    400: invalid,
    ...auth,
    404: problem("This server's store cannot list leases"),
    ...streamBounds,
  };
  return {
    history: createRoute({
      method: "get",
      path: "/v1/leases/{name}/history",
      operationId: "leaseHistory",
      tags: ["console"],
      summary:
        "The terms this server has seen of one lease and what ended each (in its memory: a restart forgets them)",
      ...security,
      request: { params: RecordNameParam },
      responses: {
        200: json(LeaseHistory, "What this server has seen; it never reads the store for this"),
        400: invalid,
        ...auth,
        ...failures,
      },
    }),
    watchLeases: {
      method: "get",
      path: "/v1/watch",
      operationId: "watchLeases",
      tags: ["console"],
      summary: "Follow every lease under a prefix as Server-Sent Events",
      description: [
        'A "snapshot" event with every lease under the prefix (up to the server\'s listing limit), then a "lease" event',
        'per change this server makes or sees, "unreadable" when a record turns out to be one the server cannot read or',
        'judge (its row replaces the lease until a "lease" event for the name), "removed" when a record is gone, and',
        '"problem" while the store cannot be read.',
        "Changes made elsewhere arrive within the server's watch poll interval (one listing per prefix per",
        "interval, shared by every stream). A reconnecting client gets a fresh snapshot: there is nothing to resume.",
        "Records are as GET shows them: a bucket of a sharded group in its owner's session's state, no reserved key.",
        "The token needs `read` over every name the prefix lists, as for listLeases; the stream counts towards the",
        "watch streams' bounds (429 per token, 503 per server).",
      ].join(" "),
      ...security,
      request: { query: ListQuery.pick({ prefix: true }) },
      responses: {
        200: eventStream("The snapshot, then changes; keep-alive comments in between", {
          snapshot: "LeaseSnapshot",
          lease: "WatchEvent",
          unreadable: "UnreadableLease",
          removed: "LeaseRemoved",
          problem: "StreamProblem",
        }),
        ...streamFailures,
      },
    } satisfies RouteConfig,
    watchGroup: {
      method: "get",
      path: "/v1/groups/{group}/watch",
      operationId: "watchGroup",
      tags: ["console"],
      summary: "Follow a sharded group's status (members, owners, targets, balance) as Server-Sent Events",
      description: [
        'A "group" event with the status now, then one whenever it changes (a write, a poll, or a member\'s session',
        'running out); "problem" while the store cannot be read. The token needs `read` over `<group>/`; the',
        "stream counts towards the watch streams' bounds (429 per token, 503 per server).",
      ].join(" "),
      ...security,
      request: { params: MemberParams.pick({ group: true }) },
      responses: {
        200: eventStream("The group's status now, then on every change; keep-alive comments in between", {
          group: "GroupWatchEvent",
          problem: "StreamProblem",
        }),
        ...streamFailures,
      },
    } satisfies RouteConfig,
    ui: {
      method: "get",
      path: "/ui",
      operationId: "consolePage",
      tags: ["console"],
      summary: "The operator's console (read-only; it asks for a token and keeps it in the tab's sessionStorage)",
      ...open,
      responses: { 200: page("text/html", "The page: a shell that loads the script and the style below") },
    } satisfies RouteConfig,
    uiScript: {
      method: "get",
      path: "/ui/console.js",
      operationId: "consoleScript",
      tags: ["console"],
      summary: "The console's script",
      ...open,
      responses: { 200: page("text/javascript", "An ES module"), 304: { description: "Not modified (If-None-Match)" } },
    } satisfies RouteConfig,
    uiStyle: {
      method: "get",
      path: "/ui/console.css",
      operationId: "consoleStyle",
      tags: ["console"],
      summary: "The console's style sheet",
      ...open,
      responses: { 200: page("text/css", "CSS"), 304: { description: "Not modified (If-None-Match)" } },
    } satisfies RouteConfig,
  };
}
