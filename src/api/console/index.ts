/**
 * The operator's console (docs/console.md) and the change log behind it, registered on the API's
 * app with one call from createApp. Everything here only reads:
 * - GET /v1/leases/{name}/history: the terms this server has seen (src/api/history.ts);
 * - GET /v1/watch?prefix=: every lease under a prefix, live (./streams.ts on ./feeds.ts);
 * - GET /v1/groups/{group}/watch: a sharded group's status, live;
 * - GET /ui, /ui/console.js, /ui/console.css: the page (./ui.ts), unless `console.ui` is false.
 * The /v1 routes go through the app's authentication and need `read` on what they show, as GET.
 * Runtime-neutral.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, Env } from "hono";
import type { Clock } from "../../clock.js";
import { validateName, validatePrefix } from "../../lease.js";
import { MAX_BUCKETS } from "../../sharding/bucket-of.js";
import { validateGroup } from "../../sharding/layout.js";
import type { Verb } from "../auth.js";
import { LeaseHistory } from "../history.js";
import type { LeaseService } from "../lease-service.js";
import type { WatchHub } from "../watch-hub.js";
import { PrefixFeeds } from "./feeds.js";
import { type ConsoleOptions, MAX_CONSOLE_STREAMS, resolveConsoleOptions } from "./options.js";
import { consoleRoutes } from "./routes.js";
import { StreamSlots, watchGroup, watchLeases } from "./streams.js";
import { page, serveAsset, servePage } from "./ui.js";
import { GroupWatchEvent, LeaseRemoved, LeaseSnapshot, StreamProblem } from "./wire.js";

export type { ConsoleOptions } from "./options.js";

export interface ConsoleDeps<E extends Env> {
  options: ConsoleOptions | undefined;
  service: LeaseService;
  hub: WatchHub;
  clock: Clock;
  /** The app's scope check: throws the 403 problem when the caller's token may not `verb` `lease`. */
  allowed: (c: Context<E>, verb: Verb, lease: string) => void;
  secured: boolean;
  settings: { maxSkewMs: number; watchPollMs: number; heartbeatMs: number; listLimit: number };
}

/** A group stream's listing: the config, every bucket record a count can have, and as many members. */
const GROUP_LISTING = 2 * MAX_BUCKETS + 1;

export function registerConsole<E extends Env>(app: OpenAPIHono<E>, deps: ConsoleDeps<E>): void {
  const o = resolveConsoleOptions(deps.options);
  const { service, hub, clock, allowed, settings } = deps;
  const history = new LeaseHistory(
    { terms: o.historyTerms, leases: o.historyLeases },
    () => clock.wallNow(),
    (record, now) => service.isFree(record, now),
  );
  const feeds = new PrefixFeeds({
    list: async (prefix, limit) => {
      const out = [];
      for await (const stored of service.list(prefix, undefined, limit)) out.push(stored);
      return out;
    },
    publish: (name, stored) => hub.publish(name, stored),
    clock,
    pollMs: settings.watchPollMs,
  });
  hub.observe((name, stored) => {
    history.observe(name, stored);
    feeds.observe(name, stored);
  });
  const streams = {
    feeds,
    slots: new StreamSlots(MAX_CONSOLE_STREAMS),
    clock,
    heartbeatMs: settings.heartbeatMs,
    maxSkewMs: settings.maxSkewMs,
    isFree: (record: Parameters<LeaseService["isFree"]>[0]) => service.isFree(record),
  };
  const routes = consoleRoutes(deps.secured);
  // The streams' event data, which only the raw SSE parts of the document reference.
  for (const schema of [LeaseSnapshot, LeaseRemoved, StreamProblem, GroupWatchEvent]) {
    app.openAPIRegistry.register(schema.meta()?.id as string, schema);
  }

  app.openAPIRegistry.registerPath(routes.history);
  app.get("/v1/leases/:name/history", (c) => {
    const name = validateName(c.req.param("name"));
    allowed(c, "read", name);
    return c.json(history.read(name), 200);
  });

  app.openAPIRegistry.registerPath(routes.watchLeases);
  app.get("/v1/watch", async (c) => {
    const prefix = validatePrefix(c.req.query("prefix") ?? "");
    allowed(c, "read", prefix);
    if (c.req.method === "HEAD") return c.body(null, 200, { "Content-Type": "text/event-stream" });
    return watchLeases(c, streams, prefix, settings.listLimit);
  });

  app.openAPIRegistry.registerPath(routes.watchGroup);
  app.get("/v1/groups/:group/watch", async (c) => {
    const group = validateGroup(c.req.param("group"));
    allowed(c, "read", `${group}/`);
    if (c.req.method === "HEAD") return c.body(null, 200, { "Content-Type": "text/event-stream" });
    return watchGroup(c, streams, group, GROUP_LISTING);
  });

  if (!o.ui) return;
  const html = page({ heartbeatMs: settings.heartbeatMs, maxSkewMs: settings.maxSkewMs, historyTerms: o.historyTerms });
  app.openAPIRegistry.registerPath(routes.ui);
  app.get("/ui", (c) => servePage(c, html));
  app.openAPIRegistry.registerPath(routes.uiScript);
  app.get("/ui/console.js", (c) => serveAsset(c, "script"));
  app.openAPIRegistry.registerPath(routes.uiStyle);
  app.get("/ui/console.css", (c) => serveAsset(c, "style"));
}
