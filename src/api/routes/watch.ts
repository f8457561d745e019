/**
 * Server-Sent Events of one lease (docs/design.md §5): "lease" events with `{ lease, free }`, the
 * current state first, then every change this instance makes or sees (src/api/watch-hub.ts), a
 * "free" event at the instant the lease expires unrenewed, and keep-alive comments. A bucket of a
 * sharded group is held while its owner's session lives, and a bound lease while its process
 * session does (src/api/lease-views.ts), so their streams also follow that session record: a
 * renewal keeps it held, a leave, a release or an expiry frees it. Streams are bounded per token
 * and in total (src/api/limits.ts), counted from before the first read to the stream's end.
 * Where the runtime cannot stream (createApp's `streams.unavailable`: a buffered Lambda
 * integration) the route answers 501 saying how to enable streaming; where it stops every request
 * at a deadline (`streams.timeLeft`: a Lambda invocation) the stream ends itself just before with
 * an "end" event, and the client resumes with Last-Event-ID. Runtime-neutral.
 */

import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { Stored } from "../../lease.js";
import { type Api, type Deps, type Env, openStream } from "../context.js";
import { scoped } from "../middleware.js";
import { ProblemError } from "../problems.js";
import { recordName } from "./leases.js";

/** The session record a held record's state follows (a bucket's owner's, a bound lease's), through the hub. */
interface Followed {
  name: string;
  stored: Stored | null | undefined;
  stop: () => void;
}

export function registerWatchRoute(app: Api, deps: Deps): void {
  const { routes, service, views, hub, metrics, clock, options, streams } = deps;
  app.openAPIRegistry.registerPath(routes.watch);
  app.get("/v1/leases/:name/watch", scoped(deps, "read", recordName), async (c: Context<Env>) => {
    const name = recordName(c);
    if ("unavailable" in streams) throw new ProblemError("streaming-unavailable", streams.unavailable);
    // HEAD: the headers a GET would send, without opening a stream nobody will read.
    if (c.req.method === "HEAD") {
      await service.get(name);
      return c.body(null, 200, { "Content-Type": "text/event-stream" });
    }
    const close = openStream(deps, c);
    let first: Stored | null;
    try {
      first = await service.get(name);
    } catch (error) {
      close();
      throw error;
    }
    metrics.watchers.inc();
    // A client resuming with the revision it last saw is not sent that state again, unless it
    // is free now: a held record with an unchanged revision is exactly what it saw, while a
    // record that has since expired may have been sent to it as held.
    const resumedAt = c.req.header("last-event-id");
    // How long this stream may run where the runtime ends every request at a deadline.
    const timeLeft = "timeLeft" in streams ? Math.max(0, streams.timeLeft(c)) : undefined;
    return streamSSE(c, async (stream) => {
      const done = new AbortController();
      stream.onAbort(() => done.abort());
      const ending = new AbortController();
      if (timeLeft !== undefined) void clock.sleep(timeLeft, done.signal).then(() => ending.abort());
      let current = first;
      let sent: string | undefined;
      let expiry = new AbortController();
      // The session the record's state follows, while it names one (a bucket's owner, a bound lease's).
      let owner: Followed | undefined;
      // The group's config (read once per stream) and the owner's session, for views.held.
      const cache = new Map<string, Promise<Stored | null>>();

      const follow = (stored: Stored | null) => {
        const wanted = views.sessionOf(stored);
        if (owner?.name === wanted) return;
        owner?.stop();
        owner = undefined;
        if (wanted === undefined) return;
        const followed: Followed = { name: wanted, stored: undefined, stop: () => undefined };
        owner = followed;
        followed.stop = hub.subscribe(wanted, (session) => {
          if (session?.revision === followed.stored?.revision && followed.stored !== undefined) return;
          followed.stored = session;
          update();
        });
      };

      const refresh = async () => {
        if (done.signal.aborted) return;
        const stored = current;
        follow(stored);
        if (owner?.stored !== undefined) cache.set(owner.name, Promise.resolve(owner.stored));
        else if (owner) cache.delete(owner.name);
        const held = stored ? await views.held(stored, cache) : undefined;
        const free = stored === null || (held ? held.free : views.isFree(stored.record));
        const revision = stored?.revision ?? "none";
        const key = `${revision}/${free}`;
        if (key === sent) return;
        const resuming = sent === undefined && revision === resumedAt;
        sent = key;
        if (!(resuming && !free)) {
          const lease = stored ? await views.view(stored, cache) : null;
          await stream.writeSSE({ event: "lease", id: revision, data: JSON.stringify({ lease, free }) });
        }
        expiry.abort();
        expiry = new AbortController();
        if (stored && !free) {
          const timer = expiry;
          const until = held?.expiresAt ?? stored.record.renewedAt + stored.record.leaseMs;
          const wait = until + options.maxSkewMs - clock.wallNow() + 1;
          void clock.sleep(wait, AbortSignal.any([timer.signal, done.signal])).then(() => {
            if (!timer.signal.aborted && !done.signal.aborted) update();
          });
        }
      };
      // One refresh at a time, in order; a failed read keeps the last state (the next change retries).
      let queue = Promise.resolve();
      const update = () => {
        queue = queue.then(refresh).catch(() => undefined);
      };

      const unsubscribe = hub.subscribe(name, (stored) => {
        if (stored?.revision === current?.revision && (stored === null) === (current === null)) return;
        current = stored;
        update();
      });
      try {
        update();
        await queue;
        const stop = AbortSignal.any([done.signal, ending.signal]);
        while (!stop.aborted) {
          await clock.sleep(options.heartbeatMs, stop);
          if (!stop.aborted) await stream.write(": keep-alive\n\n");
        }
        if (ending.signal.aborted && !done.signal.aborted) {
          await queue;
          const reason = "the runtime ends this request soon: resume with Last-Event-ID";
          await stream.writeSSE({ event: "end", data: JSON.stringify({ reason }) });
        }
      } finally {
        unsubscribe();
        owner?.stop();
        expiry.abort();
        done.abort();
        close();
      }
    });
  });
}
