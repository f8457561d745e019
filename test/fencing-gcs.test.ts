/**
 * docs/fencing.md, object store, against fake-gcs-server: the recipe (examples/fencing/gcs.ts)
 * and `fencedWrite` (src/fencing/gcs.ts). The object fences' shared cases
 * (test/support/object-fence-suite.ts: stale writes refused, retries, corrupt terms, racing
 * writers), then what only GCS has: why the generation alone is not a fence, SDK retries of an
 * applied upload through the fault proxy, option checks.
 */
import { Storage } from "@google-cloud/storage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { saveReport, saveReportWithHelper } from "../examples/fencing/gcs.js";
import { LeaseValidationError } from "../src/errors.js";
import { DEFAULT_TERM_KEY, fencedWrite, StaleTermError, WRITE_ID_KEY } from "../src/fencing/gcs.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { deposedLeaderWrites } from "./support/deposed-leader.js";
import { GcsFaultProxy } from "./support/gcs-proxy.js";
import { describeObjectFence } from "./support/object-fence-suite.js";
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

describeObjectFence("GCS fencedWrite (fake-gcs-server)", {
  write: async (key, options) => {
    const { generation, attempts } = await fencedWrite(bucket.file(key), { contentType: "text/plain", ...options });
    return { version: generation, attempts };
  },
  read: async (key) => {
    const { body, metadata, generation } = await read(key);
    return { body, metadata: metadata as Record<string, string>, version: generation };
  },
  putRaw: async (key, body, metadata) => {
    await bucket.file(key).save(body, { resumable: false, metadata: { metadata } });
  },
  resource: (key) => `gs://${bucketName}/${key}`,
  termKey: DEFAULT_TERM_KEY,
  writeIdKey: WRITE_ID_KEY,
});

describe("fencedWrite", () => {
  it("a stale write sends no upload (counted at a proxy)", async () => {
    const name = uniqueName("fenced");
    const file = bucket.file(name);
    await fencedWrite(file, { term: 4, data: "four", contentType: "text/plain" });
    const viaProxy = new Storage({ apiEndpoint: proxy.endpoint, projectId }).bucket(bucketName).file(name);
    const before = proxy.uploads;
    const error = await rejection(fencedWrite(viaProxy, { term: 3, data: "three" }));
    expect(error).toMatchObject({ name: "StaleTermError", term: 3, seenTerm: 4 });
    expect(proxy.uploads).toBe(before); // refused on the read, before any upload
    expect((await read(name)).body).toBe("four");
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
