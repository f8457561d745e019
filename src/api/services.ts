/**
 * The services one API instance builds once (src/api/app.ts), and how they are wired so that
 * every call goes one way (docs/design.md §5, "One way"):
 *
 *   routes → LeaseService / ShardService → store (metered, under deadlines) ; LeaseService → publish → WatchHub
 *   WatchHub → streams → LeaseViews → store
 *
 * The lease service hands what it reads and writes to the hub through a callback, and the
 * streams the hub feeds judge records through `LeaseViews`, whose reads are not published: so
 * nothing the hub calls leads back into the hub. Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { Admission } from "./admission.js";
import type { AppOptions } from "./app-options.js";
import type { Authorizer } from "./auth.js";
import type { Deps } from "./context.js";
import { ForceRelease } from "./force-release.js";
import { LeaseService } from "./lease-service.js";
import { LeaseViews } from "./lease-views.js";
import { RecordQuota, WatchStreams } from "./limits.js";
import type { ApiLogger } from "./log.js";
import { meteredStore } from "./metered-store.js";
import { ApiMetrics } from "./metrics.js";
import { apiRoutes } from "./openapi.js";
import type { ResolvedAppOptions } from "./options.js";
import { ShardService } from "./shard-service.js";
import { deadlineStore, StoreHealth } from "./store-deadline.js";
import { WatchHub } from "./watch-hub.js";

export function buildDeps(
  options: AppOptions,
  resolved: ResolvedAppOptions,
  auth: Authorizer,
  clock: Clock,
  log: ApiLogger,
): Deps {
  const metrics = new ApiMetrics();
  const storeHealth = new StoreHealth();
  const bounded = deadlineStore(options.store, {
    timeoutMs: resolved.storeTimeoutMs,
    clock,
    metrics,
    health: storeHealth,
  });
  const store = meteredStore(bounded, clock, metrics, log);
  const hub = new WatchHub(store, clock, resolved.watchPollMs);
  const views = new LeaseViews(store, clock, resolved.maxSkewMs);
  const quota = new RecordQuota(resolved, clock, store);
  const service = new LeaseService({
    store,
    clock,
    views,
    publish: (name, stored) => hub.publish(name, stored),
    quota,
    log,
  });
  const watchers = new WatchStreams(resolved);
  metrics.gauge("leasehold_watch_streams_open", "Watch streams open now.", () => watchers.count.total);
  metrics.gauge("leasehold_watched_leases", "Leases with at least one watch stream (one feed each).", () => hub.size);
  return {
    auth,
    service,
    views,
    forceRelease: new ForceRelease({ store, views, clock, publish: (name, stored) => hub.publish(name, stored), log }),
    shards: new ShardService(service, clock, resolved.maxSkewMs, resolved.bucketWritesPerHeartbeat),
    hub,
    watchers,
    metrics,
    clock,
    options: resolved,
    streams: options.streams ?? {},
    routes: apiRoutes(auth.secured),
    admission: admissionOf(resolved, options.admission?.lateness, metrics, hub),
    storeHealth,
    store,
  };
}

/** Admission with its metrics, when createApp was given `admission`. */
function admissionOf(
  resolved: ResolvedAppOptions,
  lateness: (() => number) | undefined,
  metrics: ApiMetrics,
  hub: WatchHub,
): Admission | undefined {
  if (!resolved.admission) return undefined;
  const late = lateness ?? (() => 0);
  const admission = new Admission(resolved.admission, late, (bound, lane) => metrics.refused.inc({ bound, lane }));
  // Every record this instance reads, writes or is pushed: who holds what, for the lanes.
  hub.observe((name, stored) => admission.holdings.note(name, stored));
  metrics.gauge("leasehold_requests_in_flight", "Requests admitted and not yet answered.", () => admission.inFlight);
  if (lateness) {
    metrics.gauge("leasehold_event_loop_late_ms", "How late the event loop is now (ms), as admission reads it.", () =>
      Math.round(late()),
    );
  }
  return admission;
}
