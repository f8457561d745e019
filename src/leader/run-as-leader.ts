/**
 * `runAsLeader(options, fn)`: the usual way to use an elector. Campaigns, calls `fn` each time
 * this candidate is elected, aborts `fn`'s signal when leadership ends, and on a graceful stop
 * waits for `fn` before releasing, so the next leader never overlaps this one's shutdown.
 * Runtime-neutral.
 */

import { validateCallbackArguments } from "../elector/options.js";
import { isLeadershipLostError, isStoreContractError, LeadershipLostError } from "../errors.js";
import type { LeaseRecord } from "../lease.js";
import { Elector, type ElectorOptions } from "./elector.js";

export interface LeaderContext {
  /** The fencing token of this term: pass it to every system you write to. */
  term: number;
  record: LeaseRecord;
  /** Aborts when leadership is lost or stop begins: stop work, then return. */
  signal: AbortSignal;
  /**
   * True while this term is held and its safe window is open, read from the monotonic clock at
   * the moment of asking. Call it right before each side effect: a process paused past its lease
   * (GC, SIGSTOP, VM migration) sees `false` on waking, before any timer has run.
   */
  stillLeader(): boolean;
  /** Throws `LeadershipLostError` unless `stillLeader()`: a one-line guard before a side effect. */
  assertLeader(): void;
}

export interface RunAsLeaderOptions extends ElectorOptions {
  /** Aborting it stops campaigning: `fn` is signalled, awaited up to graceMs, then the lease is released. */
  signal?: AbortSignal;
  /** Called with the elector before it starts (to subscribe to events). */
  onElector?: (elector: Elector) => void;
}

/**
 * Campaigns and calls `fn` each time this candidate is elected. When leadership is lost `fn`'s
 * signal aborts and, once `fn` returns, the candidate campaigns again. When `fn` returns while
 * still leader its work is done: the lease is released and its result returned. Aborting
 * `options.signal` stops (resolving `undefined`) after `fn` has returned or graceMs has passed.
 */
export async function runAsLeader<T>(
  options: RunAsLeaderOptions,
  fn: (context: LeaderContext) => Promise<T> | T,
): Promise<T | undefined> {
  validateCallbackArguments("runAsLeader", options, fn);
  const { signal, onElector, ...electorOptions } = options;
  const elector = new Elector(electorOptions);
  onElector?.(elector);
  return runLeader(elector, fn, signal ? { signal } : {});
}

/** What `runLeader` drives: an `Elector`, or a lease bound to a session (`session.elector(...)`). */
export type LeaderElector = Pick<Elector, "on" | "start" | "stop" | "trackWork">;

/**
 * `runAsLeader` for an elector already made (e.g. `session.elector({ name })`): the same rules,
 * the same result. `options.signal` stops it.
 */
export async function runLeader<T>(
  elector: LeaderElector,
  fn: (context: LeaderContext) => Promise<T> | T,
  options: { signal?: AbortSignal } = {},
): Promise<T | undefined> {
  validateCallbackArguments("runLeader", options, fn);
  return new Promise<T | undefined>((resolve, reject) => {
    let previous: Promise<unknown> = Promise.resolve();
    let settled = false;
    const finish = (result: () => void) => {
      if (settled) return;
      settled = true;
      void elector.stop({ release: true }).then(result, reject);
    };
    elector.on("elected", ({ term, record, signal, stillLeader }) => {
      const assertLeader = () => {
        if (!stillLeader()) {
          throw isLeadershipLostError(signal.reason) ? signal.reason : new LeadershipLostError(term, "expired");
        }
      };
      // The previous term's fn must have returned before the next starts: no overlap with ourselves.
      const run = previous.then(async () => {
        if (signal.aborted) return;
        try {
          const value = await fn({ term, record, signal, stillLeader, assertLeader });
          if (!signal.aborted) finish(() => resolve(value));
        } catch (error) {
          if (!signal.aborted) finish(() => reject(error));
        }
      });
      previous = run;
      elector.trackWork(run);
    });
    // A store that cannot keep the contract stops the elector: the caller hears why.
    elector.on("error", ({ error }) => {
      if (isStoreContractError(error)) finish(() => reject(error));
    });
    const outer = options.signal;
    if (outer?.aborted) return finish(() => resolve(undefined));
    outer?.addEventListener("abort", () => finish(() => resolve(undefined)), { once: true });
    elector.start();
  });
}
