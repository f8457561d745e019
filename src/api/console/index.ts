/**
 * The operator's console (docs/console.md) and the change log behind it, registered on the API's
 * app with one call from createApp. Everything here only reads:
 * - GET /v1/leases/{name}/history: the terms this server has seen (src/api/history.ts);
 * - GET /v1/watch?prefix=: every lease under a prefix, live (./streams.ts on ./feeds.ts);
 * - GET /v1/groups/{group}/watch: a sharded group's status, live;
 * - GET /ui, /ui/console.js, /ui/console.css: the page (./ui.ts), unless `console.ui` is false.
 * The /v1 routes go through the app's authentication and need `read` on what they show, as GET
 * and the listing do; the streams count towards the watch streams' bounds (src/api/limits.ts).
 * Runtime-neutral.
 */
import type { Context } from "hono";
import { MAX_BUCKETS } from "../../sharding/bucket-of.js";
import { validateGroup } from "../../sharding/layout.js";
import { type Api, type Deps, type Env, openStream } from "../context.js";
import { LeaseHistory } from "../history.js";
import { listingScoped, scoped } from "../middleware.js";
import { queryPrefix, recordName } from "../routes/leases.js";
import { PrefixFeeds } from "./feeds.js";
import { type ConsoleOptions, resolveConsoleOptions } from "./options.js";
import { consoleRoutes } from "./routes.js";
import { watchGroup, watchLeases } from "./streams.js";
import { page, serveAsset, servePage } from "./ui.js";
import { GroupWatchEvent, LeaseRemoved, LeaseSnapshot, StreamProblem } from "./wire.js";

export type { ConsoleOptions } from "./options.js";

/** A group stream's listing: the config, every bucket record a count can have, and as many members. */
const GROUP_LISTING = 2 * MAX_BUCKETS + 1;

const groupOf = (c: Context) => validateGroup(c.req.param("group"));

export function registerConsole(app: Api, deps: Deps, options: ConsoleOptions | undefined): void {
  const o = resolveConsoleOptions(options);
  const { service, views, hub, clock } = deps;
  const { maxSkewMs, watchPollMs, heartbeatMs, listLimit } = deps.options;
  const history = new LeaseHistory(
    { terms: o.historyTerms, leases: o.historyLeases },
    () => clock.wallNow(),
    // A bucket or a bound lease is judged by its session, as GET does; any other record by its own stamps.
    (stored) => views.state(stored),
    // Each tenant keeps its share: one tenant's churn forgets its own history first.
    (name) => deps.auth.tenantOf(name),
  );
  const feeds = new PrefixFeeds({
    list: async (prefix, limit) => {
      const out = [];
      for await (const stored of service.list(prefix, undefined, limit)) out.push(stored);
      return out;
    },
    publish: (name, stored) => hub.publish(name, stored),
    heldState: (stored, cache) => views.held(stored, cache),
    sessionOf: (stored) => views.sessionOf(stored),
    clock,
    pollMs: watchPollMs,
  });
  hub.observe((name, stored) => {
    history.observe(name, stored);
    feeds.observe(name, stored);
  });
  const streams = {
    feeds,
    open: (c: Context) => openStream(deps, c as Context<Env>),
    opened: () => deps.metrics.watchers.inc(),
    clock,
    heartbeatMs,
    maxSkewMs,
    isFree: (record: Parameters<typeof views.isFree>[0]) => views.isFree(record),
  };
  const routes = consoleRoutes(deps.auth.secured);
  // The streams' event data, which only the raw SSE parts of the document reference.
  for (const schema of [LeaseSnapshot, LeaseRemoved, StreamProblem, GroupWatchEvent]) {
    app.openAPIRegistry.register(schema.meta()?.id as string, schema);
  }

  app.openAPIRegistry.registerPath(routes.history);
  app.get("/v1/leases/:name/history", scoped(deps, "read", recordName), async (c) =>
    c.json(await history.read(recordName(c)), 200),
  );

  // HEAD: the headers a GET would send, without opening a stream nobody will read.
  const sse = (c: Context) => c.body(null, 200, { "Content-Type": "text/event-stream" });
  app.openAPIRegistry.registerPath(routes.watchLeases);
  app.get("/v1/watch", listingScoped(deps, queryPrefix), async (c) =>
    c.req.method === "HEAD" ? sse(c) : watchLeases(c, streams, queryPrefix(c), listLimit),
  );

  app.openAPIRegistry.registerPath(routes.watchGroup);
  app.get(
    "/v1/groups/:group/watch",
    listingScoped(deps, (c) => `${groupOf(c)}/`),
    async (c) => (c.req.method === "HEAD" ? sse(c) : watchGroup(c, streams, groupOf(c), GROUP_LISTING)),
  );

  if (!o.ui) return;
  const html = page({ heartbeatMs, maxSkewMs, historyTerms: o.historyTerms });
  app.openAPIRegistry.registerPath(routes.ui);
  app.get("/ui", (c) => servePage(c, html));
  app.openAPIRegistry.registerPath(routes.uiScript);
  app.get("/ui/console.js", (c) => serveAsset(c, "script"));
  app.openAPIRegistry.registerPath(routes.uiStyle);
  app.get("/ui/console.css", (c) => serveAsset(c, "style"));
}
