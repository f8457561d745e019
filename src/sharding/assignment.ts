/**
 * The target assignment: which member should own each bucket, computed by every member on its own
 * from the same inputs, with no coordinator (docs/sharding.md, "Assignment").
 *
 * Inputs: the view (the live members) and the current owners. Output: one member per bucket, with
 * perfect balance: every member gets floor(N/M) or ceil(N/M) buckets.
 *
 * 1. Quotas: N mod M members may hold ceil(N/M), the rest floor(N/M). The larger quotas go to the
 *    members that already hold the most (ties by id), so no bucket moves just to shift the
 *    remainder around.
 * 2. Keep: each member keeps the buckets it owns, up to its quota, preferring its highest
 *    rendezvous scores.
 * 3. Fill: every other bucket goes to the member with the highest rendezvous score that still has
 *    room (greedy over (member, bucket) pairs by descending score: rendezvous hashing with bounded
 *    load).
 *
 * With no owners this is plain bounded-load rendezvous hashing. Keeping owners makes the number of
 * buckets a membership change moves the minimum: a join takes about N/(M+1) buckets from the
 * fullest members, a leave spreads only the leaver's buckets. Pure and runtime-neutral.
 */
import { fnv1a64 } from "./bucket-of.js";

const utf8 = new TextEncoder();

/** MurmurHash3's 32-bit finaliser: a fast, well-mixed bijection on 32-bit words. */
function fmix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A member's 32-bit rendezvous seed: the two halves of FNV-1a 64 of its id, xor-ed. */
export function memberSeed(id: string): number {
  const h = fnv1a64(utf8.encode(id));
  return Number((h >> 32n) ^ (h & 0xffffffffn)) >>> 0;
}

/** The rendezvous score of (member, bucket): higher wins. */
export function rendezvousScore(seed: number, bucket: number): number {
  return fmix32(seed ^ fmix32(Math.imul(bucket + 1, 0x9e3779b1)));
}

export interface AssignmentInput {
  /** The live members (any order, duplicates ignored). */
  members: readonly string[];
  buckets: number;
  /** The current owner of each bucket, when that owner is one of `members`; otherwise null or absent. */
  owners?: ReadonlyArray<string | null | undefined>;
}

/** How many buckets each member should hold: floor(N/M) or ceil(N/M), the larger quotas to those holding most. */
export function quotas(members: readonly string[], buckets: number, loads: ReadonlyMap<string, number>) {
  const sorted = [...new Set(members)].sort();
  const out = new Map<string, number>();
  if (sorted.length === 0) return out;
  const base = Math.floor(buckets / sorted.length);
  const extra = buckets % sorted.length;
  const byLoad = [...sorted].sort((a, b) => (loads.get(b) ?? 0) - (loads.get(a) ?? 0) || (a < b ? -1 : 1));
  for (const [i, m] of byLoad.entries()) out.set(m, base + (i < extra ? 1 : 0));
  return out;
}

/** The target owner of every bucket (`undefined` for all when there are no members). */
export function targetAssignment(input: AssignmentInput): Array<string | undefined> {
  const { buckets } = input;
  const members = [...new Set(input.members)].sort();
  const target: Array<string | undefined> = new Array(buckets).fill(undefined);
  if (members.length === 0) return target;
  const inView = new Set(members);
  const seeds = new Map(members.map((m) => [m, memberSeed(m)]));
  const score = (m: string, b: number) => rendezvousScore(seeds.get(m)!, b);

  const owned = new Map<string, number[]>(members.map((m) => [m, []]));
  for (let b = 0; b < buckets; b++) {
    const owner = input.owners?.[b];
    if (owner != null && inView.has(owner)) owned.get(owner)!.push(b);
  }
  const loads = new Map([...owned].map(([m, list]) => [m, list.length]));
  const quota = quotas(members, buckets, loads);
  const room = new Map<string, number>();
  for (const m of members) {
    const keep = owned
      .get(m)!
      .sort((a, b) => score(m, b) - score(m, a) || a - b)
      .slice(0, quota.get(m)!);
    for (const b of keep) target[b] = m;
    room.set(m, quota.get(m)! - keep.length);
  }

  const open: number[] = [];
  for (let b = 0; b < buckets; b++) if (target[b] === undefined) open.push(b);
  if (open.length === 0) return target;
  const hungry = members.filter((m) => room.get(m)! > 0);
  const pairs: Array<[number, number, number]> = []; // [score, member index in hungry, bucket]
  for (const [i, m] of hungry.entries()) for (const b of open) pairs.push([score(m, b), i, b]);
  pairs.sort((x, y) => y[0] - x[0] || x[1] - y[1] || x[2] - y[2]);
  let left = open.length;
  for (const [, i, b] of pairs) {
    if (target[b] !== undefined) continue;
    const m = hungry[i]!;
    const r = room.get(m)!;
    if (r === 0) continue;
    target[b] = m;
    room.set(m, r - 1);
    if (--left === 0) break;
  }
  return target;
}
