/**
 * The object-store fences' shared cases (src/fencing/object-fence.ts is their shared loop): GCS,
 * S3 and Azure Blob each run them against their own server, through a small target that names
 * the backend's helper, how to read an object back and how to plant one behind the fence's back.
 * What only one backend has (GCS generations, S3 ETags, SDK retries through a proxy, option
 * checks) stays in that backend's test file.
 */
import { describe, expect, it } from "vitest";
import { LeaseholdError } from "../../src/errors.js";
import { FenceCorruptError, StaleTermError } from "../../src/fencing/fence.js";
import { uniqueName } from "../../src/testkit/store-contract.js";
import { deposedLeaderWrites } from "./deposed-leader.js";
import { rejection } from "./rejection.js";
import { raceTerms } from "./term-race.js";

type Data = string | Uint8Array | ((current: Uint8Array | null) => string | Uint8Array | Promise<string | Uint8Array>);

export interface ObjectFenceTarget {
  /** The fenced write of this backend to the object `key` (a fresh client per call is fine). */
  write(
    key: string,
    options: { term: number; data: Data; maxAttempts?: number; metadata?: Record<string, string> },
  ): Promise<{ attempts: number; version: string }>;
  /** The object as stored: its content (UTF-8), custom metadata and version. */
  read(key: string): Promise<{ body: string; metadata: Record<string, string>; version: string }>;
  /** Writes an object without the fence (to plant a corrupt term). */
  putRaw(key: string, body: string, metadata: Record<string, string>): Promise<void>;
  /** The object `key` as the fence names it in messages (`s3://bucket/key`). */
  resource(key: string): string;
  termKey: string;
  writeIdKey: string;
}

const text = (bytes: Uint8Array | null) => (bytes === null ? "" : new TextDecoder().decode(bytes));

export function describeObjectFence(label: string, target: ObjectFenceTarget): void {
  describe(`${label}: the object fence's shared cases`, () => {
    it("keeps the term and a write id beside your metadata; a newer term overwrites; an older one is refused before any upload", async () => {
      const key = uniqueName("fenced");
      const first = await target.write(key, { term: 4, data: "four", metadata: { a: "1" } });
      expect(first.attempts).toBe(1);
      const stored = await target.read(key);
      expect(stored).toEqual({
        body: "four",
        metadata: { a: "1", [target.termKey]: "4", [target.writeIdKey]: expect.any(String) },
        version: first.version,
      });
      const error = await rejection(target.write(key, { term: 3, data: "three" }));
      expect(error).toBeInstanceOf(StaleTermError);
      expect(error).toMatchObject({ term: 3, seenTerm: 4, resource: target.resource(key) });
      expect((error as Error).message).toContain(`fenced write to ${target.resource(key)} refused: it holds term 4`);
      // Refused on the read: no upload happened, so the version is the one term 4 wrote.
      expect(await target.read(key)).toEqual(stored);
      await target.write(key, { term: 4, data: "four again" });
      await target.write(key, { term: 6, data: "six" });
      expect(await target.read(key)).toMatchObject({ body: "six", metadata: { [target.termKey]: "6" } });
    });

    it("with terms from the library: the deposed leader's late write is StaleTermError with the new term", async () => {
      const key = uniqueName("report");
      const outcome = await deposedLeaderWrites((writer, term) =>
        target.write(key, { term, data: `by ${writer} at ${term}` }),
      );
      expect(outcome).toMatchObject({ oldTerm: 1, newTerm: 2, oldSignalAborted: true });
      expect(outcome.staleError).toBeInstanceOf(StaleTermError);
      expect(outcome.staleError).toMatchObject({ term: 1, seenTerm: 2 });
      expect(await target.read(key)).toMatchObject({ body: "by new at 2", metadata: { [target.termKey]: "2" } });
    });

    it("read-modify-write: the function gets the content of the version it replaces", async () => {
      const key = uniqueName("counter");
      const increment = (current: Uint8Array | null) => String(Number(text(current) || "0") + 1);
      await target.write(key, { term: 1, data: increment });
      await target.write(key, { term: 1, data: increment });
      await target.write(key, { term: 2, data: increment });
      expect(await target.read(key)).toMatchObject({ body: "3", metadata: { [target.termKey]: "2" } });
    });

    it("a writer with a term <= mine winning in between makes it read and try again", async () => {
      const key = uniqueName("counter");
      await target.write(key, { term: 1, data: "0" });
      let calls = 0;
      const result = await target.write(key, {
        term: 2,
        data: async (current) => {
          calls++;
          // The first time, the same leader's other worker writes between our read and our upload.
          if (calls === 1) await target.write(key, { term: 2, data: "10" });
          return String(Number(text(current)) + 1);
        },
      });
      expect(result.attempts).toBe(2);
      expect(calls).toBe(2);
      expect((await target.read(key)).body).toBe("11");
    });

    it("a newer term winning between the read and the upload: the retry's read refuses it, the failed condition as cause", async () => {
      const key = uniqueName("report");
      await target.write(key, { term: 1, data: "by 1" });
      const error = await rejection(
        target.write(key, {
          term: 1,
          data: async () => {
            await target.write(key, { term: 2, data: "by 2" });
            return "late, by 1";
          },
        }),
      );
      expect(error).toMatchObject({ name: "StaleTermError", term: 1, seenTerm: 2 });
      expect((error as Error).cause).toBeDefined();
      expect((await target.read(key)).body).toBe("by 2");
    });

    it("gives up after maxAttempts while others keep winning, with a LeaseholdError carrying the failed condition", async () => {
      const key = uniqueName("busy");
      await target.write(key, { term: 1, data: "0" });
      let round = 0;
      const error = await rejection(
        target.write(key, {
          term: 1,
          maxAttempts: 2,
          data: async () => {
            await target.write(key, { term: 1, data: `theirs ${++round}` });
            return "mine";
          },
        }),
      );
      expect(error).toBeInstanceOf(LeaseholdError);
      expect((error as Error).message).toContain("gave up after 2 attempts");
      expect((error as Error).cause).toBeDefined();
      expect((await target.read(key)).body).toBe("theirs 2");
    });

    it("a stored term that is not a whole number is FenceCorruptError, never overwritten", async () => {
      const key = uniqueName("odd");
      await target.putRaw(key, "odd", { [target.termKey]: "seven" });
      const error = await rejection(target.write(key, { term: 9, data: "x" }));
      expect(error).toBeInstanceOf(FenceCorruptError);
      expect((error as Error).message).toContain('its stored fence "seven" is not a term');
      expect((await target.read(key)).body).toBe("odd");
    });

    it("racing writers of terms 1..8, many rounds: the highest always wins and ends on the object; the rest win or are refused", async () => {
      const keys = Array.from({ length: 6 }, () => uniqueName("race"));
      const writers = 8;
      await raceTerms({
        writers,
        rounds: keys.length,
        // Each lost round means another writer's upload applied: writers - 1 losses at most.
        write: (round, term, body) => target.write(keys[round] as string, { term, data: body, maxAttempts: writers }),
        read: async (round) => {
          const { body, metadata } = await target.read(keys[round] as string);
          return { term: Number(metadata[target.termKey]), body };
        },
      });
    });
  });
}
