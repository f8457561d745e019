/**
 * docs/fencing.md, object store, against fake-gcs-server: the recipe (examples/fencing/gcs.ts)
 * and `fencedWrite` (src/fencing/gcs.ts). Each shows a stale leader's write refused after a newer
 * term wrote, an equal term allowed, and what the caller sees; one shows why the generation alone
 * is not a fence. SDK retries of an applied upload go through the fault proxy.
 */
import { Storage } from "@google-cloud/storage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { saveReport, saveReportWithHelper } from "../examples/fencing/gcs.js";
import { LeaseholdError, LeaseValidationError } from "../src/errors.js";
import { FenceCorruptError, fencedWrite, StaleTermError, WRITE_ID_KEY } from "../src/fencing/gcs.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { deposedLeaderWrites } from "./support/deposed-leader.js";
import { GcsFaultProxy } from "./support/gcs-proxy.js";
import { rejection } from "./support/rejection.js";

const endpoint = process.env.GCS_ENDPOINT;
if (!endpoint) throw new Error("GCS_ENDPOINT is not set: test/servers/fake-gcs.server.ts should have started");
const projectId = "leasehold-test";
const bucketName = `fencing-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
// Retries off, as a careful caller configures a client for conditional writes; one test turns them on.
const storage = new Storage({ apiEndpoint: endpoint, projectId, retryOptions: { autoRetry: false, maxRetries: 0 } });
const bucket = storage.bucket(bucketName);

let proxy: GcsFaultProxy;
beforeAll(async () => {
  await storage.createBucket(bucketName);
  proxy = await GcsFaultProxy.start(endpoint);
});
afterAll(async () => {
  await proxy?.close();
});

async function read(name: string): Promise<{ body: string; metadata: Record<string, unknown>; generation: string }> {
  const file = bucket.file(name);
  const [metadata] = await file.getMetadata();
  const [body] = await file.download();
  return { body: body.toString(), metadata: { ...metadata.metadata }, generation: String(metadata.generation) };
}

describe("GCS recipe (examples/fencing/gcs.ts)", () => {
  it("creates the object with its term, lets a newer term overwrite, refuses an older one", async () => {
    const file = bucket.file(uniqueName("report"));
    expect(await saveReport(file, "by term 1", 1)).toBe(true);
    expect(await saveReport(file, "by term 2", 2)).toBe(true);
    expect(await saveReport(file, "late, by term 1", 1)).toBe(false);
    expect(await read(file.name)).toMatchObject({ body: "by term 2", metadata: { term: "2" } });
    expect(await saveReport(file, "again by term 2", 2)).toBe(true);
    expect(await read(file.name)).toMatchObject({ body: "again by term 2", metadata: { term: "2" } });
  });

  it("the generation alone is not the fence: a deposed leader that reads after the new leader wrote passes it", async () => {
    const name = uniqueName("report");
    await saveReport(bucket.file(name), "by term 1", 1);
    await saveReport(bucket.file(name), "by term 2", 2);
    // The deposed leader of term 1 reads now, so it holds the current generation: the
    // compare-and-swap alone lets it overwrite the newer leader's data.
    const [metadata] = await bucket.file(name).getMetadata();
    await bucket.file(name).save("late, by term 1", {
      resumable: false,
      preconditionOpts: { ifGenerationMatch: String(metadata.generation) },
    });
    expect((await read(name)).body).toBe("late, by term 1");
    // The term kept beside the data is what refuses it.
    await saveReport(bucket.file(name), "by term 2", 2);
    expect(await saveReport(bucket.file(name), "late, by term 1", 1)).toBe(false);
    expect((await read(name)).body).toBe("by term 2");
  });

  it("with terms from the library: the deposed leader's write is StaleTermError with the new term", async () => {
    const name = uniqueName("report");
    const outcome = await deposedLeaderWrites((writer, term) =>
      saveReportWithHelper(bucket.file(name), `by ${writer}`, term),
    );
    expect(outcome).toMatchObject({ oldTerm: 1, newTerm: 2, oldSignalAborted: true });
    expect(outcome.staleError).toBeInstanceOf(StaleTermError);
    expect(outcome.staleError).toMatchObject({ term: 1, seenTerm: 2 });
    expect((outcome.staleError as Error).message).toContain(`fenced write to gs://${bucketName}/${name} refused`);
    expect(await read(name)).toMatchObject({ body: "by new", metadata: { "leasehold-term": "2" } });
  });
});

describe("fencedWrite", () => {
  it("keeps your metadata beside the fence; a stale write sends no upload", async () => {
    const name = uniqueName("fenced");
    const file = bucket.file(name);
    const first = await fencedWrite(file, { term: 4, data: "four", contentType: "text/plain", metadata: { a: "1" } });
    expect(first.attempts).toBe(1);
    const stored = await read(name);
    expect(stored.generation).toBe(first.generation);
    expect(stored.body).toBe("four");
    expect(stored.metadata).toEqual({ a: "1", "leasehold-term": "4", [WRITE_ID_KEY]: expect.any(String) });

    const viaProxy = new Storage({ apiEndpoint: proxy.endpoint, projectId }).bucket(bucketName).file(name);
    const before = proxy.uploads;
    const error = await rejection(fencedWrite(viaProxy, { term: 3, data: "three" }));
    expect(error).toMatchObject({ name: "StaleTermError", term: 3, seenTerm: 4 });
    expect(proxy.uploads).toBe(before); // refused on the read, before any upload
    expect((await read(name)).body).toBe("four");
  });

  it("read-modify-write: the function gets the content of the generation it replaces", async () => {
    const file = bucket.file(uniqueName("counter"));
    const increment = (current: Uint8Array | null) => String(Number(current === null ? 0 : Buffer.from(current)) + 1);
    await fencedWrite(file, { term: 1, data: increment });
    await fencedWrite(file, { term: 1, data: increment });
    await fencedWrite(file, { term: 2, data: increment });
    expect(await read(file.name)).toMatchObject({ body: "3", metadata: { "leasehold-term": "2" } });
  });

  it("a writer with a term <= mine winning in between makes it read and try again", async () => {
    const file = bucket.file(uniqueName("counter"));
    await fencedWrite(file, { term: 1, data: "0" });
    let calls = 0;
    const result = await fencedWrite(file, {
      term: 2,
      data: async (current) => {
        calls++;
        // The first time, the same leader's other worker writes between our read and our upload.
        if (calls === 1) await fencedWrite(bucket.file(file.name), { term: 2, data: "10" });
        return String(Number(Buffer.from(current ?? new Uint8Array())) + 1);
      },
    });
    expect(result.attempts).toBe(2);
    expect(calls).toBe(2);
    expect((await read(file.name)).body).toBe("11");
  });

  it("a newer term winning between the read and the upload: the retry's read refuses it", async () => {
    const file = bucket.file(uniqueName("report"));
    await fencedWrite(file, { term: 1, data: "by 1" });
    const error = await rejection(
      fencedWrite(file, {
        term: 1,
        data: async () => {
          await fencedWrite(bucket.file(file.name), { term: 2, data: "by 2" });
          return "late, by 1";
        },
      }),
    );
    expect(error).toMatchObject({ name: "StaleTermError", term: 1, seenTerm: 2 });
    expect((error as Error).cause).toMatchObject({ code: 412 });
    expect((await read(file.name)).body).toBe("by 2");
  });

  it("gives up after maxAttempts while others keep winning, with a LeaseholdError carrying the 412", async () => {
    const file = bucket.file(uniqueName("busy"));
    await fencedWrite(file, { term: 1, data: "0" });
    const error = await rejection(
      fencedWrite(file, {
        term: 1,
        maxAttempts: 2,
        data: async () => {
          await fencedWrite(bucket.file(file.name), { term: 1, data: "theirs" });
          return "mine";
        },
      }),
    );
    expect(error).toBeInstanceOf(LeaseholdError);
    expect((error as Error).message).toContain("gave up after 2 attempts");
    expect((error as Error).cause).toMatchObject({ code: 412 });
    expect((await read(file.name)).body).toBe("theirs");
  });

  it("an upload that applied but whose answer was lost, retried by the SDK into 412, is recognised as ours", async () => {
    const name = uniqueName("retried");
    await fencedWrite(bucket.file(name), { term: 1, data: "0" });
    // The SDK's default retries (up to 3 on resets and 5xx) are on for this client.
    const retrying = new Storage({ apiEndpoint: proxy.endpoint, projectId }).bucket(bucketName).file(name);
    let calls = 0;
    proxy.failNextUpload("reset-after-apply");
    const before = proxy.uploads;
    const result = await fencedWrite(retrying, {
      term: 1,
      data: (current) => {
        calls++;
        return String(Number(Buffer.from(current ?? new Uint8Array())) + 1);
      },
    });
    expect(proxy.uploads - before).toBe(2); // the SDK retried, and the retry met 412
    expect(calls).toBe(1); // not applied twice
    expect(result).toEqual({ generation: (await read(name)).generation, attempts: 1 });
    expect((await read(name)).body).toBe("1");
  });

  it("a stored term that is not a whole number is FenceCorruptError, never overwritten", async () => {
    const name = uniqueName("odd");
    await bucket.file(name).save("odd", { resumable: false, metadata: { metadata: { "leasehold-term": "seven" } } });
    const error = await rejection(fencedWrite(bucket.file(name), { term: 9, data: "x" }));
    expect(error).toBeInstanceOf(FenceCorruptError);
    expect((error as Error).message).toContain('its stored fence "seven" is not a term');
    expect((await read(name)).body).toBe("odd");
  });

  it("rejects bad options naming the field, and writes nothing", async () => {
    const name = uniqueName("invalid");
    const cases: Array<[unknown, string]> = [
      [{ term: 0, data: "x" }, "term: expected a term >= 1"],
      [{ term: 1 }, "data: expected a string, a Uint8Array or a function"],
      [{ term: 1, data: 5 }, "data: expected a string"],
      [{ term: 1, data: "x", termKey: "Bad Key" }, "termKey: expected 1-63 characters"],
      [{ term: 1, data: "x", metadata: { "leasehold-term": "9" } }, "metadata.leasehold-term: is reserved"],
      [{ term: 1, data: "x", metadata: { [WRITE_ID_KEY]: "w" } }, `metadata.${WRITE_ID_KEY}: is reserved`],
      [{ term: 1, data: "x", maxAttempts: 0 }, "maxAttempts: expected at least 1"],
      [{ term: 1, data: "x", other: true }, "other: unknown field"],
    ];
    for (const [options, message] of cases) {
      const error = await rejection(fencedWrite(bucket.file(name), options as never));
      expect(error).toBeInstanceOf(LeaseValidationError);
      expect((error as Error).message).toContain(message);
    }
    expect(await rejection(fencedWrite({} as never, { term: 1, data: "x" }))).toMatchObject({
      message: expect.stringContaining("file: expected a File"),
    });
    expect((await bucket.file(name).exists())[0]).toBe(false);
  });
});
