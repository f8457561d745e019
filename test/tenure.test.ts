/**
 * The tenure rules (src/tenure.ts) against the language-neutral vectors in test/vectors/tenure.json,
 * which the Go module runs too (clients/go/tenure_test.go): one rule, one place, shared vectors.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  expiresAt,
  freeByStamps,
  freeInMs,
  judge,
  type Seen,
  type Tenure,
  type TenureRecord,
  tenureOver,
  type Verdict,
} from "../src/tenure.js";

interface Vectors {
  tenureOver: Array<{ tenure: Tenure; record: TenureRecord; over: boolean }>;
  stamps: Array<{ record: TenureRecord; wallNow: number; maxSkewMs: number; free: boolean; freeInMs: number }>;
  expiresAt: Array<{ record: TenureRecord; firstSeen: number; wallNow: number; maxSkewMs: number; expiresAt: number }>;
  judge: Array<{
    why: string;
    tenure: Tenure | null;
    seen: Seen;
    now: number;
    wallNow: number;
    maxSkewMs: number;
    fallbackMs: number;
    verdict: Verdict;
  }>;
}

const vectors = JSON.parse(readFileSync(join(import.meta.dirname, "vectors", "tenure.json"), "utf8")) as Vectors;

describe("tenure vectors", () => {
  it("tenureOver", () => {
    for (const v of vectors.tenureOver) expect(tenureOver(v.tenure, v.record), JSON.stringify(v)).toBe(v.over);
  });
  it("freeByStamps and freeInMs", () => {
    for (const v of vectors.stamps) {
      expect(freeByStamps(v.record, v.wallNow, v.maxSkewMs), JSON.stringify(v)).toBe(v.free);
      expect(freeInMs(v.record, v.wallNow, v.maxSkewMs), JSON.stringify(v)).toBe(v.freeInMs);
    }
  });
  it("expiresAt", () => {
    for (const v of vectors.expiresAt) {
      expect(expiresAt(v.record, v.firstSeen, v.wallNow, v.maxSkewMs), JSON.stringify(v)).toBe(v.expiresAt);
    }
  });
  it("judge", () => {
    for (const v of vectors.judge) {
      const verdict = judge(v.tenure ?? undefined, v.seen, v);
      expect(verdict, v.why).toEqual(v.verdict);
    }
  });
  it("every case is run: none of the lists is empty", () => {
    for (const list of Object.values(vectors).filter(Array.isArray)) expect(list.length).toBeGreaterThan(3);
  });
});
