/**
 * The store as the API uses it: every call timed and counted for /metrics (latency per op,
 * conflicts, failures), and failures logged by class and code, never by message. The service and
 * the watch hub both read through it, so a watch's polling read is measured like any other.
 * Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { isAmbiguous, LeaseConflictError, LeaseCorruptError, LeaseValidationError } from "../errors.js";
import type { LeaseStore } from "../lease.js";
import { type ApiLogger, failureFields } from "./log.js";
import type { ApiMetrics } from "./metrics.js";

export function meteredStore(store: LeaseStore, clock: Clock, metrics: ApiMetrics, log: ApiLogger): LeaseStore {
  const timed = async <T>(op: "get" | "put" | "list", fn: () => Promise<T>): Promise<T> => {
    const started = clock.now();
    try {
      return await fn();
    } catch (error) {
      if (error instanceof LeaseConflictError) metrics.conflicts.inc();
      else if (error instanceof LeaseCorruptError) {
        log.error("lease record corrupt", { op, lease: error.lease });
      } else if (!(error instanceof LeaseValidationError)) {
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
  };
  const list = store.list;
  if (list) {
    metered.list = (prefix, options) => {
      const started = clock.now();
      return (async function* () {
        try {
          yield* list.call(store, prefix, options);
        } catch (error) {
          if (!(error instanceof LeaseValidationError || error instanceof LeaseCorruptError)) {
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
