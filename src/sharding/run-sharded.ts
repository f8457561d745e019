/**
 * `runSharded(options, fn)`: the usual way to be a member of a sharded group. Joins, calls `fn`
 * once per bucket this member is given (each call with the bucket's own fencing term and signal),
 * aborts that signal when the bucket must be given up, and on a graceful stop waits for every `fn`
 * before leaving, so no bucket's next owner overlaps this one's shutdown. Runtime-neutral.
 */
import { BucketLostError, isLeadershipLostError } from "../errors.js";
import type { LeaseRecord } from "../lease.js";
import { validateRunShardedArguments } from "./options.js";
import { type AssignedKind, ShardedElector, type ShardedElectorOptions } from "./sharded-elector.js";

export interface BucketContext {
  /** The bucket this call works on: handle a key only when `bucketOf(key, buckets) === bucket`. */
  bucket: number;
  /** The group's bucket count under which this call runs. */
  buckets: number;
  /** The bucket's fencing token for this call: pass it to every system you write to for its keys. */
  term: number;
  record: LeaseRecord;
  /** Aborts when this member must give the bucket up (hand-off, session lost, re-shard, stop): stop, then return. */
  signal: AbortSignal;
  /**
   * True while this member holds the bucket and its session's safe window is open, read from the
   * monotonic clock at the moment of asking. Call it right before each side effect: a process paused
   * past its session (GC, SIGSTOP) sees `false` on waking, before any timer has run.
   */
  stillLeader(): boolean;
  /** Throws a `BucketLostError` (a `LeadershipLostError`) unless `stillLeader()`. */
  assertLeader(): void;
  /** How this member came to hold the bucket. */
  kind: AssignedKind;
}

export interface RunShardedOptions extends ShardedElectorOptions {
  /** Aborting it leaves the group: every `fn` is signalled and awaited (up to graceMs), then the buckets are released. */
  signal?: AbortSignal;
  /** Called with the elector before it starts (to subscribe to events or track metrics). */
  onElector?: (elector: ShardedElector) => void;
}

/**
 * Joins the group and calls `fn` for each bucket this member holds, for as long as it holds it.
 * One bucket's next call starts only after its previous one returned. Resolves once
 * `options.signal` aborts and the member has left; rejects with the first error an `fn` threw
 * while its bucket was held (after leaving the group the same way).
 */
export async function runSharded(
  options: RunShardedOptions,
  fn: (context: BucketContext) => Promise<void> | void,
): Promise<void> {
  validateRunShardedArguments(options, fn);
  const { signal: outer, onElector, ...electorOptions } = options;
  const elector = new ShardedElector(electorOptions);
  onElector?.(elector);
  return new Promise<void>((resolve, reject) => {
    const previous = new Map<number, Promise<unknown>>();
    let settled = false;
    const finish = (result: () => void) => {
      if (settled) return;
      settled = true;
      void elector.stop({ handOff: true }).then(result, reject);
    };
    elector.on("assigned", ({ bucket, buckets, term, record, signal, stillLeader, kind }) => {
      const assertLeader = () => {
        if (stillLeader()) return;
        const reason = signal.reason;
        throw isLeadershipLostError(reason) ? reason : new BucketLostError(bucket, term, "session-expired");
      };
      // No overlap with ourselves: a bucket's previous call must have returned first.
      const run = (previous.get(bucket) ?? Promise.resolve()).then(async () => {
        if (signal.aborted) return;
        try {
          await fn({ bucket, buckets, term, record, signal, stillLeader, assertLeader, kind });
        } catch (error) {
          if (!signal.aborted) finish(() => reject(error));
        }
      });
      previous.set(bucket, run);
      elector.trackWork(bucket, term, run);
    });
    if (outer?.aborted) {
      settled = true;
      return resolve();
    }
    outer?.addEventListener("abort", () => finish(resolve), { once: true });
    elector.start();
  });
}
