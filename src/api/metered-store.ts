/**
 * The store as the API uses it: every call timed and counted for /metrics (latency per op,
 * conflicts, failures), and failures logged by class and code, never by message. The service and
 * the watch hub both read through it, so a watch's polling read is measured like any other (a
 * batch read as op "get_many", one call per request the hub sends).
 * Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { isAmbiguous, isLeaseConflictError, isLeaseCorruptError, isLeaseValidationError } from "../errors.js";
import type { LeaseStore } from "../lease.js";
import { type ApiLogger, failureFields } from "./log.js";
import type { ApiMetrics } from "./metrics.js";

export function meteredStore(store: LeaseStore, clock: Clock, metrics: ApiMetrics, log: ApiLogger): LeaseStore {
  const timed = async <T>(op: "get" | "get_many" | "put" | "list", fn: () => Promise<T>): Promise<T> => {
    const started = clock.now();
    try {
      return await fn();
    } catch (error) {
      if (isLeaseConflictError(error)) metrics.conflicts.inc();
      else if (isLeaseCorruptError(error)) {
        log.error("lease record corrupt", { op, lease: error.lease });
      } else if (!isLeaseValidationError(error)) {
        metrics.storeErrors.inc({ op, ambiguous: String(isAmbiguous(error)) });
        log.error("store call failed", { op, ...failureFields(error) });
      }
      throw error;
    } finally {
      metrics.storeLatency.observe({ op }, (clock.now() - started) / 1000);
    }
  };
  const metered: LeaseStore = {
    get: (name, options) => timed("get", () => store.get(name, options)),
    put: (next, expected, options) => timed("put", () => store.put(next, expected, options)),
    ...(store.limits ? { limits: store.limits } : {}),
  };
  const getMany = store.getMany;
  if (getMany) metered.getMany = (names, options) => timed("get_many", () => getMany.call(store, names, options));
  const list = store.list;
  if (list) {
    metered.list = (prefix, options) => {
      const started = clock.now();
      return (async function* () {
        try {
          yield* list.call(store, prefix, options);
        } catch (error) {
          if (!(isLeaseValidationError(error) || isLeaseCorruptError(error))) {
            metrics.storeErrors.inc({ op: "list", ambiguous: "false" });
            log.error("store call failed", { op: "list", ...failureFields(error) });
          }
          throw error;
        } finally {
          metrics.storeLatency.observe({ op: "list" }, (clock.now() - started) / 1000);
        }
      })();
    };
  }
  const watch = store.watch;
  if (watch) metered.watch = (name, signal) => watch.call(store, name, signal);
  const checkRevision = store.checkRevision;
  if (checkRevision) metered.checkRevision = (revision) => checkRevision.call(store, revision);
  return metered;
}
