/**
 * The console's two streams (docs/console.md): every lease under a prefix, and a sharded group's
 * status. Both ride a shared listing feed (./feeds.ts); each stream keeps only what it has not sent
 * yet, coalesced (the newest record per lease, one "status changed" flag), so a slow reader costs
 * at most one feed's worth of memory, never a queue that grows. Each counts towards the watch
 * streams' bounds, per token and in total (src/api/limits.ts), as a lease's watch does.
 * Runtime-neutral.
 */
import type { Context } from "hono";
import { type SSEMessage, streamSSE } from "hono/streaming";
import type { Clock } from "../../clock.js";
import type { UnreadableLeaseView } from "../../http/schemas.js";
import type { LeaseRecord, Stored } from "../../lease.js";
import { groupStatus } from "../../sharding/group-status.js";
import { toView } from "../lease-views.js";
import type { FeedEvent, FeedView, PrefixFeeds } from "./feeds.js";

export interface StreamDeps {
  feeds: PrefixFeeds;
  /** Counts one more stream of the request's caller, or throws 429/503 (src/api/context.ts openStream). */
  open: (c: Context) => () => void;
  /** Counts a stream that opened (leasehold_watch_streams_total). */
  opened: () => void;
  clock: Clock;
  heartbeatMs: number;
  maxSkewMs: number;
  isFree: (record: LeaseRecord) => boolean;
}

/**
 * Opens a feed over `prefix`, builds the stream's source on it, and serves it: the source's
 * messages whenever the feed wakes it, a keep-alive comment when `heartbeatMs` passes in silence.
 * The stream is counted and the feed taken before the response starts, so a refusal is an HTTP
 * problem.
 */
async function serve(
  c: Context,
  deps: StreamDeps,
  prefix: string,
  limit: number,
  source: (
    view: FeedView,
    wake: () => void,
  ) => {
    onEvent: (event: FeedEvent) => void;
    drain: () => SSEMessage[];
  },
): Promise<Response> {
  const release = deps.open(c);
  // Set by every feed event; the writer loop drains again before it sleeps when it is set.
  let pending = false;
  let woken: AbortController | undefined;
  const wake = () => {
    pending = true;
    woken?.abort();
  };
  let handle: ReturnType<typeof source> | undefined;
  let subscription: Awaited<ReturnType<PrefixFeeds["subscribe"]>>;
  try {
    subscription = await deps.feeds.subscribe(prefix, limit, (event) => handle?.onEvent(event));
  } catch (error) {
    release();
    throw error;
  }
  deps.opened();
  handle = source(subscription.view, wake);
  const { drain } = handle;
  return streamSSE(c, async (stream) => {
    const done = new AbortController();
    stream.onAbort(() => done.abort());
    try {
      while (!done.signal.aborted) {
        pending = false;
        for (const message of drain()) await stream.writeSSE(message);
        if (pending) continue;
        woken = new AbortController();
        await deps.clock.sleep(deps.heartbeatMs, AbortSignal.any([done.signal, woken.signal]));
        const silent = !woken.signal.aborted;
        woken = undefined;
        if (!done.signal.aborted && silent) await stream.write(": keep-alive\n\n");
      }
    } finally {
      subscription.stop();
      release();
      done.abort();
    }
  });
}

/** `GET /v1/watch?prefix=`: a snapshot, then the newest record of each lease that changed. */
export function watchLeases(c: Context, deps: StreamDeps, prefix: string, limit: number): Promise<Response> {
  return serve(c, deps, prefix, limit, (view, wake) => {
    let snapshot = true;
    let problem: string | undefined;
    // The newest of each changed name: its record, its unreadable row, or null (gone).
    const changed = new Map<string, Stored | UnreadableLeaseView | null>();
    // As GET and a lease's watch report it: a bucket by its owner's session (./feeds.ts).
    const lease = (stored: Stored) => {
      const held = view.held.get(stored.record.name);
      return { lease: toView(stored, held), free: held ? held.free : deps.isFree(stored.record) };
    };
    const message = (name: string, entry: Stored | UnreadableLeaseView | null): SSEMessage => {
      if (entry === null) return { event: "removed", data: JSON.stringify({ name }) };
      // A record that reads but cannot be judged is sent as its row, as the listing does.
      const row = "record" in entry ? view.unreadable.get(name) : entry;
      if (row) return { event: "unreadable", data: JSON.stringify(row) };
      return { event: "lease", data: JSON.stringify(lease(entry as Stored)) };
    };
    return {
      onEvent(event) {
        if (event.kind === "tick") return;
        if (event.kind === "snapshot") {
          snapshot = true;
          problem = undefined;
          changed.clear();
        } else if (event.kind === "problem") problem = event.detail;
        else if (event.kind === "change") changed.set(event.stored.record.name, event.stored);
        else if (event.kind === "unreadable") changed.set(event.row.name, event.row);
        else changed.set(event.name, null);
        wake();
      },
      drain() {
        const out: SSEMessage[] = [];
        if (snapshot) {
          snapshot = false;
          changed.clear();
          const data = {
            prefix,
            now: deps.clock.wallNow(),
            maxSkewMs: deps.maxSkewMs,
            limit,
            truncated: view.truncated,
            leases: [...view.records.values()].filter((s) => !view.unreadable.has(s.record.name)).map(lease),
            unreadable: [...view.unreadable.values()],
          };
          out.push({ event: "snapshot", data: JSON.stringify(data) });
        }
        for (const [name, entry] of changed) out.push(message(name, entry));
        changed.clear();
        if (problem !== undefined) out.push({ event: "problem", data: JSON.stringify({ detail: problem }) });
        problem = undefined;
        return out;
      },
    };
  });
}

/** `GET /v1/groups/{group}/watch`: the group's status, again whenever it differs from the last one sent. */
export function watchGroup(c: Context, deps: StreamDeps, group: string, limit: number): Promise<Response> {
  return serve(c, deps, `${group}/`, limit, (view, wake) => {
    let dirty = true;
    let problem: string | undefined;
    let last = "";
    return {
      onEvent(event) {
        if (event.kind === "problem") problem = event.detail;
        dirty = true;
        wake();
      },
      drain() {
        const out: SSEMessage[] = [];
        if (problem !== undefined) out.push({ event: "problem", data: JSON.stringify({ detail: problem }) });
        problem = undefined;
        if (!dirty) return out;
        dirty = false;
        const now = deps.clock.wallNow();
        const found = groupStatus(group, [...view.records.values()], now);
        // Without each member's expiresAt, which every heartbeat moves: a status changes when the group does.
        const status = JSON.stringify(
          found ? { ...found, members: found.members.map(({ expiresAt: _, ...m }) => m) } : null,
        );
        if (status !== last) {
          last = status;
          out.push({ event: "group", data: `{"group":${JSON.stringify(group)},"now":${now},"status":${status}}` });
        }
        return out;
      },
    };
  });
}
