/**
 * `bucketOf` is language-neutral (docs/sharding.md, "bucketOf"): the test vectors the docs print,
 * the same numbers from a small Go program using Go's own `hash/fnv` and the reference jump hash,
 * and the property that makes jump hash the right choice (few keys move when N changes).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LeaseValidationError } from "../../src/errors.js";
import { bucketOf, fnv1a64, jumpHash } from "../../src/sharding/bucket-of.js";

const utf8 = new TextEncoder();
const COUNTS = [1, 2, 16, 64, 1000];

/** The table in docs/sharding.md: key, FNV-1a 64 in hex, bucket for N = 1, 2, 16, 64, 1000. */
const VECTORS: Array<[string, string, number[]]> = [
  ["", "cbf29ce484222325", [0, 1, 13, 17, 266]],
  ["a", "af63dc4c8601ec8c", [0, 1, 12, 31, 163]],
  ["order-42", "7d1deb86a05662d4", [0, 0, 7, 7, 111]],
  ["tenant/7/invoice/2026-001", "8c4b8b9401cfe804", [0, 1, 4, 54, 852]],
  ["héllo", "a35ff71f960240e0", [0, 1, 4, 52, 962]],
  ["日本", "121d7e35a6d3ce91", [0, 0, 14, 37, 130]],
  ["🙂", "ff026b387504e24b", [0, 1, 4, 4, 524]],
];

const GO_PROGRAM = `package main

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
)

// Lamping and Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm" (2014).
func jump(key uint64, buckets int32) int32 {
	var b, j int64 = -1, 0
	for j < int64(buckets) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int32(b)
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Scan()
	var counts []int32
	for _, f := range strings.Fields(in.Text()) {
		n, _ := strconv.Atoi(f)
		counts = append(counts, int32(n))
	}
	for in.Scan() {
		key, _ := strconv.Unquote(in.Text())
		h := fnv.New64a()
		h.Write([]byte(key))
		sum := h.Sum64()
		out := []string{fmt.Sprintf("%016x", sum)}
		for _, n := range counts {
			out = append(out, strconv.Itoa(int(jump(sum, n))))
		}
		fmt.Println(strings.Join(out, " "))
	}
}
`;

function ours(key: string, counts: number[]): string {
  const hex = fnv1a64(utf8.encode(key)).toString(16).padStart(16, "0");
  return [hex, ...counts.map((n) => String(bucketOf(key, n)))].join(" ");
}

describe("bucketOf", () => {
  it("matches the documented test vectors", () => {
    for (const [key, hex, buckets] of VECTORS) {
      expect(fnv1a64(utf8.encode(key)).toString(16).padStart(16, "0")).toBe(hex);
      expect(COUNTS.map((n) => bucketOf(key, n))).toEqual(buckets);
      expect(bucketOf(utf8.encode(key), 64)).toBe(buckets[3]);
    }
  });

  it("computes what a Go program with hash/fnv and the reference jump hash computes", () => {
    const keys = [...VECTORS.map(([k]) => k), ...Array.from({ length: 300 }, (_, i) => `key-${i * 7919}/ü${i}`)];
    const counts = [1, 2, 3, 7, 16, 64, 100, 1000, 4096];
    const dir = mkdtempSync(join(tmpdir(), "leasehold-bucketof-"));
    try {
      writeFileSync(join(dir, "main.go"), GO_PROGRAM);
      // Go's %q-compatible quoting: JSON strings of BMP and astral characters parse with strconv.Unquote.
      const input = [counts.join(" "), ...keys.map((k) => JSON.stringify(k))].join("\n");
      const output = execFileSync("go", ["run", "main.go"], {
        cwd: dir,
        input,
        encoding: "utf8",
        env: { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod", GO111MODULE: "off" },
      });
      expect(output.trim().split("\n")).toEqual(keys.map((k) => ours(k, counts)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("moves only about 1/(N+1) of the keys when a bucket is added, all of them to the new bucket", () => {
    const keys = Array.from({ length: 20_000 }, (_, i) => `k${i}`);
    for (const n of [4, 16, 63]) {
      const moved = keys.filter((k) => bucketOf(k, n) !== bucketOf(k, n + 1));
      expect(moved.every((k) => bucketOf(k, n + 1) === n)).toBe(true);
      expect(moved.length / keys.length).toBeGreaterThan(0.6 / (n + 1));
      expect(moved.length / keys.length).toBeLessThan(1.4 / (n + 1));
    }
  });

  it("spreads keys evenly", () => {
    const counts = new Array(16).fill(0);
    for (let i = 0; i < 32_000; i++) counts[bucketOf(`event-${i}`, 16)]++;
    expect(Math.min(...counts)).toBeGreaterThan(1800);
    expect(Math.max(...counts)).toBeLessThan(2200);
  });

  it("rejects a bad bucket count or key, naming the field", () => {
    expect(() => bucketOf("k", 0)).toThrow(LeaseValidationError);
    expect(() => bucketOf("k", 1.5)).toThrow(/buckets: expected a whole number from 1 to/);
    expect(() => bucketOf("k", 70_000)).toThrow(/buckets/);
    expect(() => bucketOf(42 as unknown as string, 4)).toThrow(/key: expected a string or a Uint8Array/);
    expect(jumpHash(0n, 1)).toBe(0);
  });
});
