/**
 * `bucketOf(key, buckets)`: which bucket a key belongs to, the same in every language.
 *
 * The algorithm (docs/sharding.md has test vectors and a Go version):
 * 1. h = FNV-1a 64 of the key's UTF-8 bytes (offset basis 0xcbf29ce484222325, prime 0x100000001b3),
 *    as Go's `hash/fnv.New64a`.
 * 2. bucket = jump consistent hash of h over `buckets` (Lamping and Veach, "A Fast, Minimal Memory,
 *    Consistent Hash Algorithm", 2014), exactly as their reference code, double division included.
 *
 * Why jump hash: when the bucket count grows from N to N + 1 only 1/(N + 1) of the keys move (all to
 * the new bucket), and when it shrinks only the keys of the removed buckets move. Plain `h mod N`
 * would move almost every key. Runtime-neutral.
 */
import { LeaseValidationError } from "../errors.js";

/**
 * The largest bucket count a group may have. Every member lists the bucket records and computes
 * the assignment (M x N rendezvous scores) while buckets move; a few thousand keeps that cheap.
 */
export const MAX_BUCKETS = 4096;

const MASK64 = (1n << 64n) - 1n;
const JUMP_MULTIPLIER = 2862933555777941757n;
const utf8 = new TextEncoder();

/**
 * FNV-1a 64 of `bytes`, as an unsigned 64-bit bigint. Computed on two 32-bit halves with plain
 * numbers (every intermediate stays below 2^53, so it is exact): about ten times faster than bigint
 * arithmetic per byte.
 */
export function fnv1a64(bytes: Uint8Array): bigint {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (const byte of bytes) {
    lo = (lo ^ byte) >>> 0;
    // h * 0x100000001b3 mod 2^64 = h * 0x1b3 + (h << 40)
    const loProduct = lo * 0x1b3;
    const carry = Math.floor(loProduct / 0x1_0000_0000);
    hi = (hi * 0x1b3 + carry + ((lo * 0x100) >>> 0)) >>> 0;
    lo = loProduct >>> 0;
  }
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/** Jump consistent hash of a 64-bit key over `buckets` buckets: a number in [0, buckets). */
export function jumpHash(key: bigint, buckets: number): number {
  let k = key & MASK64;
  let b = -1;
  let j = 0;
  while (j < buckets) {
    b = j;
    k = (k * JUMP_MULTIPLIER + 1n) & MASK64;
    j = Math.floor((b + 1) * (2147483648 / (Number(k >> 33n) + 1)));
  }
  return b;
}

/** Throws a `LeaseValidationError` naming `field` unless `buckets` is a whole number in 1..MAX_BUCKETS. */
export function validateBucketCount(buckets: unknown, field = "buckets", what = "bucket count"): number {
  if (typeof buckets !== "number" || !Number.isInteger(buckets) || buckets < 1 || buckets > MAX_BUCKETS) {
    throw new LeaseValidationError(what, [
      { path: field, message: `expected a whole number from 1 to ${MAX_BUCKETS}, got ${String(buckets)}` },
    ]);
  }
  return buckets;
}

/**
 * The bucket `key` belongs to among `buckets` buckets. `key` is a string (hashed as UTF-8) or raw
 * bytes. A replica works on a key only inside the context of the bucket it maps to:
 * `bucketOf(key, context.buckets) === context.bucket`.
 */
export function bucketOf(key: string | Uint8Array, buckets: number): number {
  validateBucketCount(buckets);
  if (typeof key !== "string" && !(key instanceof Uint8Array)) {
    throw new LeaseValidationError("bucket key", [{ path: "key", message: "expected a string or a Uint8Array" }]);
  }
  return jumpHash(fnv1a64(typeof key === "string" ? utf8.encode(key) : key), buckets);
}
