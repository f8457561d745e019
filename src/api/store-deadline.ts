/**
 * A deadline on every store call the API makes (docs/partitions.md, "The API and its store"):
 * with its link to the store cut or half-open, a call would otherwise wait until the link heals,
 * holding the client's request (answered 19 s late in a 19.5 s cut) and then acting on it after
 * the client had long given up.
 *
 * - Each call gets at most `timeoutMs` (LEASEHOLD_STORE_TIMEOUT_MS), and never past the request's
 *   own deadline (the signal the routes pass down: the client's `Leasehold-Timeout-Ms`, or its
 *   connection closing, src/api/request-deadline.ts). A call past either is abandoned: a read
 *   failed, a write ambiguous (it may still land; the write path settles it by reading, under the
 *   same deadline), and the route answers 503 `store-unavailable` with Retry-After.
 * - A call whose request deadline has already passed is never sent: nothing is written after
 *   the fact for a client that has gone or given up.
 * - Timeouts are counted (`leasehold_store_timeouts_total`, by op and by whose deadline), latency
 *   by the metered store around this one; `health` says whether the store answered lately, for
 *   `/readyz`.
 *
 * Runtime-neutral: the injected clock's `sleep`, AbortController.
 */
import type { Clock } from "../clock.js";
import { isLeaseConflictError, isLeaseCorruptError, isLeaseValidationError, LeaseStoreError } from "../errors.js";
import type { CallOptions, LeaseStore } from "../lease.js";
import type { ApiMetrics } from "./metrics.js";

type Op = "get" | "get_many" | "put" | "list";

/** Whether the store answered lately: what `/readyz` reports. */
export class StoreHealth {
  /** Monotonic time of the last call the store answered (a conflict or a missing record is an answer). */
  lastAnswer = Number.NEGATIVE_INFINITY;
  /** Monotonic time of the last call that timed out or could not reach the store, if after the last answer. */
  failingSince: number | undefined;
  lastFailure: string | undefined;

  answered(at: number): void {
    this.lastAnswer = at;
    this.failingSince = undefined;
    this.lastFailure = undefined;
  }

  failed(at: number, error: unknown): void {
    this.failingSince ??= at;
    this.lastFailure = error instanceof Error ? error.message : String(error);
  }
}

/** A store error that still means the store answered (not a link or availability failure). */
function isAnswer(error: unknown): boolean {
  return isLeaseConflictError(error) || isLeaseValidationError(error) || isLeaseCorruptError(error);
}

/** The request's deadline passed, or its client left, before a store call was sent: nothing was. */
export class RequestDeadlineError extends LeaseStoreError {
  override name = "RequestDeadlineError";
  constructor(op: string) {
    super(`the request's deadline passed (or its client left) before the store ${op}: it was not sent`, {
      ambiguous: false,
    });
  }
}

export interface StoreDeadlineOptions {
  timeoutMs: number;
  clock: Clock;
  metrics: ApiMetrics;
  health: StoreHealth;
}

/**
 * A call given up at a deadline (the store's, or the request's): counted, told to `health`, and the
 * error to answer with. A write given up may still land: ambiguous.
 */
function abandoned(o: StoreDeadlineOptions, op: Op, by: "store" | "request", startedAt: number): LeaseStoreError {
  o.metrics.storeTimeouts.inc({ op, deadline: by });
  const error = new LeaseStoreError(
    by === "request"
      ? `store ${op} abandoned after ${Math.round(o.clock.now() - startedAt)} ms: the request's deadline passed or its client left`
      : `store ${op} timed out after ${o.timeoutMs} ms (LEASEHOLD_STORE_TIMEOUT_MS)`,
    { ambiguous: op === "put" },
  );
  o.health.failed(o.clock.now(), error);
  return error;
}

/** A call the store settled: an answer (a conflict or a refusal is one too), or a failure to reach it. */
function settled(o: StoreDeadlineOptions, error?: unknown): void {
  if (error === undefined || isAnswer(error)) o.health.answered(o.clock.now());
  else o.health.failed(o.clock.now(), error);
}

export function deadlineStore(store: LeaseStore, o: StoreDeadlineOptions): LeaseStore {
  const call = async <T>(op: Op, given: CallOptions | undefined, fn: (options: CallOptions) => Promise<T>) => {
    const request = given?.signal;
    if (request?.aborted) {
      o.metrics.storeTimeouts.inc({ op, deadline: "request" });
      throw new RequestDeadlineError(op);
    }
    const abort = new AbortController();
    const timer = new AbortController();
    let expired: "store" | "request" | undefined;
    const stop = (by: "store" | "request") => {
      expired ??= by;
      abort.abort();
    };
    const onRequest = () => stop("request");
    request?.addEventListener("abort", onRequest, { once: true });
    const started = o.clock.now();
    const pending = fn({ ...given, signal: abort.signal });
    pending.catch(() => undefined);
    const timedOut = new Promise<never>((_, reject) => {
      const fail = () => reject(abandoned(o, op, expired === "request" ? "request" : "store", started));
      abort.signal.addEventListener("abort", fail, { once: true });
      void o.clock.sleep(o.timeoutMs, timer.signal).then(() => {
        if (!timer.signal.aborted) stop("store");
      });
    });
    timedOut.catch(() => undefined);
    try {
      const value = await Promise.race([pending, timedOut]);
      settled(o);
      return value;
    } catch (error) {
      if (!abort.signal.aborted) settled(o, error); // an abandoned call was reported as such
      throw error;
    } finally {
      timer.abort();
      request?.removeEventListener("abort", onRequest);
    }
  };
  const bounded: LeaseStore = {
    get: (name, options) => call("get", options, (opts) => store.get(name, opts)),
    put: (next, expected, options) => call("put", options, (opts) => store.put(next, expected, opts)),
    ...(store.limits ? { limits: store.limits } : {}),
  };
  const getMany = store.getMany;
  if (getMany)
    bounded.getMany = (names, options) => call("get_many", options, (opts) => getMany.call(store, names, opts));
  const list = store.list;
  if (list) {
    // A listing is read step by step (a page, where the backend pages; most steps are answered
    // from a page already read): each step gets `timeoutMs`, kept by one watchdog timer per
    // listing rather than a timer per step (a page of 1,000 records cost 1,000 timers: 13 ms a
    // page became 76, bench/corrupt-listing.bench.ts).
    bounded.list = (prefix, options) => {
      const source = list.call(store, prefix, options)[Symbol.asyncIterator]();
      const steps = new StepDeadline(o);
      return {
        [Symbol.asyncIterator]: () => ({
          next: () => steps.run(() => source.next()),
          return: async () => {
            steps.end();
            return (await source.return?.()) ?? { done: true, value: undefined };
          },
        }),
      };
    };
  }
  const watch = store.watch;
  if (watch) bounded.watch = (name, signal) => watch.call(store, name, signal);
  const checkRevision = store.checkRevision;
  if (checkRevision) bounded.checkRevision = (revision) => checkRevision.call(store, revision);
  return bounded;
}

/** `store` with `signal` (a request's deadline) given to every call, beside any the caller gives. */
export function withSignal(store: LeaseStore, signal: AbortSignal | undefined): LeaseStore {
  if (!signal) return store;
  const join = (options: CallOptions | undefined): CallOptions => ({
    ...options,
    signal: options?.signal ? AbortSignal.any([options.signal, signal]) : signal,
  });
  return {
    get: (name, options) => store.get(name, join(options)),
    put: (next, expected, options) => store.put(next, expected, join(options)),
    ...(store.limits ? { limits: store.limits } : {}),
  };
}

/**
 * The deadline of a listing's steps, one at a time: a step not answered `timeoutMs` after it began
 * fails as a timed-out store call (a read: not ambiguous). One timer watches whichever step is
 * current, sleeping until that step's deadline and on past steps that answered meanwhile.
 */
class StepDeadline {
  private current: { started: number; fail: (error: unknown) => void } | undefined;
  private watching = false;
  private readonly stopped = new AbortController();

  constructor(private readonly o: StoreDeadlineOptions) {}

  run<T>(step: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const mine = { started: this.o.clock.now(), fail: reject };
      this.current = mine;
      this.watch();
      step().then(
        (value) => {
          if (this.current !== mine) return; // timed out already
          this.current = undefined;
          settled(this.o);
          resolve(value);
        },
        (error: unknown) => {
          if (this.current !== mine) return;
          this.current = undefined;
          settled(this.o, error);
          reject(error);
        },
      );
    });
  }

  /** The listing is done (or abandoned): the watchdog stops. */
  end(): void {
    this.current = undefined;
    this.stopped.abort();
  }

  private watch(): void {
    if (this.watching) return;
    this.watching = true;
    void (async () => {
      try {
        for (let step = this.current; step && !this.stopped.signal.aborted; step = this.current) {
          const left = step.started + this.o.timeoutMs - this.o.clock.now();
          if (left > 0) {
            await this.o.clock.sleep(left, this.stopped.signal);
            continue;
          }
          this.current = undefined;
          step.fail(abandoned(this.o, "list", "store", step.started));
        }
      } finally {
        this.watching = false;
      }
    })();
  }
}
