/**
 * The sharded checker: the single-lease safety checker (checker.ts) run for every bucket, plus what
 * only a group has.
 *
 * Safety, per bucket (each bucket is a lease whose holder is a member):
 * 1. one holder per bucket term, and the store applied that term for that holder;
 * 2. a bucket's terms only grow;
 * 3. no two members inside their safe windows for one bucket at once (a member is inside for a
 *    bucket while it works on it and its session window is open by its own clock, judged on true time);
 * 4. the bucket's fenced resource accepts writes only from the current term.
 * Across buckets and bucket counts: no key is worked on by two tenures at once, whatever counts
 * they ran under (a re-shard must not let the old and the new count overlap).
 *
 * Liveness, at the end of a quiet period with at least one member up: every bucket is worked on
 * by exactly one live member, and the live members' loads differ by at most one.
 *
 * Pure functions over plain data.
 */
import { bucketOf } from "../../src/sharding/bucket-of.js";
import { checkTrace, type Election, mergeWindows, type SafeWindow, type StoreWrite } from "./checker.js";
import type { FencedWrite } from "./fenced-resource.js";

export interface BucketTrace {
  elections: Election[];
  windows: SafeWindow[];
  storeWrites: StoreWrite[];
  fenced: FencedWrite[];
}

export interface ShardedTrace {
  buckets: Map<number, BucketTrace>;
  /** The bucket count each tenure ran under, by `${bucket}/${term}`. */
  countOf: Map<string, number>;
  /** Sample keys for the cross-count check. */
  keys: string[];
}

export function checkShardedTrace(trace: ShardedTrace): string[] {
  const out: string[] = [];
  for (const [bucket, t] of [...trace.buckets].sort((a, b) => a[0] - b[0])) {
    out.push(...checkTrace(t).map((v) => `bucket ${bucket}: ${v}`));
  }
  out.push(...checkKeyOverlaps(trace));
  return out;
}

/** No key inside two tenures' safe windows at once (different buckets or bucket counts included). */
export function checkKeyOverlaps(trace: ShardedTrace): string[] {
  const windows = [...trace.buckets].flatMap(([bucket, t]) =>
    mergeWindows(t.windows).map((w) => ({ ...w, bucket, buckets: trace.countOf.get(`${bucket}/${w.term}`) ?? -1 })),
  );
  const keySets = new Map<string, Set<number>>();
  const keysOf = (bucket: number, buckets: number) => {
    const id = `${bucket}/${buckets}`;
    let set = keySets.get(id);
    if (!set) {
      set = new Set(trace.keys.flatMap((k, i) => (buckets > 0 && bucketOf(k, buckets) === bucket ? [i] : [])));
      keySets.set(id, set);
    }
    return set;
  };
  const out: string[] = [];
  windows.sort((a, b) => a.start - b.start);
  for (let i = 0; i < windows.length; i++) {
    const a = windows[i]!;
    for (let j = i + 1; j < windows.length && windows[j]!.start < a.end; j++) {
      const b = windows[j]!;
      if (a.bucket === b.bucket && a.buckets === b.buckets) continue; // checked per bucket
      const other = keysOf(b.bucket, b.buckets);
      const shared = [...keysOf(a.bucket, a.buckets)].find((k) => other.has(k));
      if (shared !== undefined) {
        out.push(
          `key ${trace.keys[shared]} inside two tenures at once: ${a.candidate} bucket ${a.bucket}/${a.buckets} term ${a.term} [${a.start}, ${a.end}) and ${b.candidate} bucket ${b.bucket}/${b.buckets} term ${b.term} [${b.start}, ${b.end})`,
        );
      }
    }
  }
  return out;
}

export interface FinalState {
  buckets: number;
  /** Live, running members (session valid), with the buckets each works on. */
  live: Map<string, number[]>;
}

export function checkLiveness(final: FinalState): string[] {
  const out: string[] = [];
  if (final.live.size === 0) return ["liveness: no live member at the end of the quiet period"];
  const owners = new Map<number, string[]>();
  for (const [member, held] of final.live) for (const b of held) owners.set(b, [...(owners.get(b) ?? []), member]);
  for (let b = 0; b < final.buckets; b++) {
    const o = owners.get(b) ?? [];
    if (o.length !== 1)
      out.push(`liveness: bucket ${b} is worked on by ${o.length === 0 ? "nobody" : o.join(" and ")}`);
  }
  const loads = [...final.live.values()].map((h) => h.length);
  if (Math.max(...loads) - Math.min(...loads) > 1) {
    out.push(`liveness: unbalanced at the end: ${[...final.live].map(([m, h]) => `${m}=${h.length}`).join(" ")}`);
  }
  return out;
}

/** Bucket-milliseconds in [from, to) during which a bucket had no member inside its safe window. */
export function unownedTime(buckets: Map<number, BucketTrace>, count: number, from: number, to: number): number {
  let total = 0;
  for (let b = 0; b < count; b++) {
    const windows = (buckets.get(b)?.windows ?? [])
      .map((w) => [Math.max(from, w.start), Math.min(to, w.end)] as const)
      .filter(([s, e]) => e > s)
      .sort((x, y) => x[0] - y[0]);
    let covered = 0;
    let reach = from;
    for (const [s, e] of windows) {
      if (e <= reach) continue;
      covered += e - Math.max(s, reach);
      reach = e;
    }
    total += to - from - covered;
  }
  return total;
}
