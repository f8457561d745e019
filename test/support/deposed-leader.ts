/**
 * A deposed leader, end to end, with terms the library hands out: two `runAsLeader` candidates
 * of one lease on a MemoryStore and a manual clock.
 *
 *   1. "old" is elected (term 1), writes, checks it still leads, and then stalls before its next
 *      write (its leader work waits on a gate, and its lease store calls hang: a paused or
 *      partitioned process, whose renewals never land);
 *   2. the lease runs out; "new" takes over (term 2) and writes;
 *   3. "old" resumes and writes with the term it was given, as a paused process would.
 *
 * The caller's `write` is the fenced write under test; what it throws in step 3 is the outcome.
 * (The same with real OS processes and SIGSTOP: fencing-processes.test.ts.)
 */

import { MemoryStore } from "../../src/backends/memory/store.js";
import { ManualClock } from "../../src/clock.js";
import { runAsLeader } from "../../src/leader/run-as-leader.js";
import { FaultyStore } from "../../src/testkit/faulty-store.js";

const LEASE_MS = 1000;

export type Writer = "old" | "new";

export interface DeposedLeaderOutcome {
  oldTerm: number;
  newTerm: number;
  /** True once "old"'s signal had aborted when it resumed (the library knew; the write did not ask). */
  oldSignalAborted: boolean;
  /** What the resumed old leader's write threw (undefined: it was accepted). */
  staleError: unknown;
}

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export async function deposedLeaderWrites(
  write: (writer: Writer, term: number) => Promise<unknown> | unknown,
): Promise<DeposedLeaderOutcome> {
  const clock = new ManualClock();
  const store = new MemoryStore();
  const oldStore = new FaultyStore(store, clock);
  const stop = new AbortController();
  const options = { name: "fencing/deposed", leaseMs: LEASE_MS, jitter: 0, clock, signal: stop.signal };

  const oldChecked = deferred<number>();
  const resume = deferred();
  const oldDone = deferred<{ error: unknown; aborted: boolean }>();
  const newWrote = deferred<number>();

  let oldElected = false;
  const oldRun = runAsLeader({ ...options, store: oldStore, identity: "old" }, async ({ term, signal }) => {
    if (oldElected) return; // elected again after the story ended: not part of it
    oldElected = true;
    try {
      await write("old", term);
      if (signal.aborted) throw new Error("old lost its lease before the pause: the scenario did not happen");
      oldChecked.resolve(term);
      await resume.promise; // the pause, after the check and before the write
      const aborted = signal.aborted;
      try {
        await write("old", term);
        oldDone.resolve({ error: undefined, aborted });
      } catch (error) {
        oldDone.resolve({ error, aborted });
      }
    } catch (error) {
      oldChecked.reject(error);
    }
  });
  const startNew = () =>
    runAsLeader({ ...options, store, identity: "new" }, async ({ term, signal }) => {
      try {
        await write("new", term);
        newWrote.resolve(term);
      } catch (error) {
        newWrote.reject(error);
      }
      // Lead until the end of the scenario, so "old" cannot take the lease back meanwhile.
      if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    });

  let newRun: Promise<unknown> = Promise.resolve();
  try {
    await clock.advance(0);
    const oldTerm = await oldChecked.promise;
    oldStore.hang = true; // from here on "old" cannot renew: its lease runs out
    newRun = startNew();
    await clock.advance(LEASE_MS * 3);
    const newTerm = await newWrote.promise;
    resume.resolve();
    const { error, aborted } = await oldDone.promise;
    return { oldTerm, newTerm, oldSignalAborted: aborted, staleError: error };
  } finally {
    oldStore.hang = false;
    for (const abort of oldStore.hung.splice(0)) abort();
    resume.resolve();
    stop.abort();
    // Graceful stops wait on the manual clock (grace, retries): keep it moving until both return.
    let done = false;
    const both = Promise.all([oldRun, newRun]).finally(() => {
      done = true;
    });
    while (!done) await clock.advance(LEASE_MS);
    await both;
  }
}
