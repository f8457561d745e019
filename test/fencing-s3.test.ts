/**
 * docs/fencing.md, S3, against versitygw: the recipe (examples/fencing/s3.ts) and
 * `fencedPutObject` (src/fencing/s3.ts). The object fences' shared cases
 * (test/support/object-fence-suite.ts: stale writes refused, retries, corrupt terms, racing
 * writers), then what only S3 has: ETags that are MD5s of the bytes (ABA), an SDK retry of an
 * applied PutObject and S3's 409 ConditionalRequestConflict through the fault proxy, input checks.
 */
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { saveReport, saveReportWithHelper } from "../examples/fencing/s3.js";
import { LeaseValidationError } from "../src/errors.js";
import { DEFAULT_TERM_KEY, fencedPutObject, StaleTermError, WRITE_ID_KEY } from "../src/fencing/s3.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { s3TestClient } from "./servers/versitygw.server.js";
import { deposedLeaderWrites } from "./support/deposed-leader.js";
import { describeObjectFence } from "./support/object-fence-suite.js";
import { ObjectStoreProxy } from "./support/object-store-proxy.js";
import { rejection } from "./support/rejection.js";

const endpoint = process.env.S3_ENDPOINT;
if (!endpoint) throw new Error("S3_ENDPOINT is not set: test/servers/versitygw.server.ts should have started");
const Bucket = `fencing-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const client = s3TestClient(endpoint, 1);

let proxy: ObjectStoreProxy;
beforeAll(async () => {
  await client.send(new CreateBucketCommand({ Bucket }));
  proxy = await ObjectStoreProxy.start(endpoint, "s3");
});
afterAll(async () => {
  await proxy?.close();
  client.destroy();
});

async function read(Key: string) {
  const got = await client.send(new GetObjectCommand({ Bucket, Key }));
  return { body: (await got.Body?.transformToString()) ?? "", metadata: got.Metadata ?? {}, version: got.ETag ?? "" };
}

describe("S3 recipe (examples/fencing/s3.ts)", () => {
  it("creates the object with its term, lets a newer term overwrite, refuses an older one", async () => {
    const key = uniqueName("report");
    expect(await saveReport(client, Bucket, key, "report", 1)).toBe(true);
    expect(await saveReport(client, Bucket, key, "report", 2)).toBe(true);
    expect(await saveReport(client, Bucket, key, "late report", 1)).toBe(false);
    expect(await read(key)).toMatchObject({ body: "report\nterm 2", metadata: { term: "2" } });
    expect(await saveReport(client, Bucket, key, "report again", 2)).toBe(true);
    expect(await read(key)).toMatchObject({ body: "report again\nterm 2", metadata: { term: "2" } });
  });

  it("with terms from the library: the deposed leader's write is StaleTermError with the new term", async () => {
    const key = uniqueName("report");
    const outcome = await deposedLeaderWrites((writer, term) =>
      saveReportWithHelper(client, Bucket, key, `by ${writer}`, term),
    );
    expect(outcome).toMatchObject({ oldTerm: 1, newTerm: 2, oldSignalAborted: true });
    expect(outcome.staleError).toBeInstanceOf(StaleTermError);
    expect(outcome.staleError).toMatchObject({ term: 1, seenTerm: 2 });
    expect((outcome.staleError as Error).message).toContain(`fenced write to s3://${Bucket}/${key} refused`);
    expect(await read(key)).toMatchObject({ body: "by new", metadata: { [DEFAULT_TERM_KEY]: "2" } });
  });
});

describeObjectFence("S3 fencedPutObject (versitygw)", {
  write: async (Key, { metadata, ...options }) => {
    const { etag, attempts } = await fencedPutObject(
      client,
      { Bucket, Key, ContentType: "text/plain", ...(metadata ? { Metadata: metadata } : {}) },
      options,
    );
    return { version: etag, attempts };
  },
  read,
  putRaw: async (Key, Body, Metadata) => {
    await client.send(new PutObjectCommand({ Bucket, Key, Body, Metadata }));
  },
  resource: (key) => `s3://${Bucket}/${key}`,
  termKey: DEFAULT_TERM_KEY,
  writeIdKey: WRITE_ID_KEY,
});

describe("fencedPutObject: what only S3 has", () => {
  it("an ETag is the MD5 of the bytes: the same bytes under a newer term keep it, and a deposed leader's bare If-Match passes (ABA)", async () => {
    const Key = uniqueName("aba");
    await client.send(new PutObjectCommand({ Bucket, Key, Body: "A", Metadata: { term: "1" } }));
    // The leader of term 1 reads the ETag, then pauses.
    const heldByOld = (await client.send(new HeadObjectCommand({ Bucket, Key }))).ETag;
    // The leader of term 2 writes the very same bytes: the ETag does not change.
    const renewed = await client.send(
      new PutObjectCommand({ Bucket, Key, Body: "A", Metadata: { term: "2" }, IfMatch: heldByOld }),
    );
    expect(renewed.ETag).toBe(heldByOld);
    // The deposed leader wakes up: its If-Match on the ETag it read passes, over term 2.
    await client.send(new PutObjectCommand({ Bucket, Key, Body: "late", Metadata: { term: "1" }, IfMatch: heldByOld }));
    expect(await read(Key)).toMatchObject({ body: "late", metadata: { term: "1" } });
  });

  it("the helper refuses, sending nothing, bytes the object holds under an older term; bytes carrying the term pass", async () => {
    const Key = uniqueName("aba");
    const viaProxy = s3TestClient(proxy.endpoint, 1);
    await fencedPutObject(viaProxy, { Bucket, Key }, { term: 1, data: "A" });
    const puts = proxy.count("put");
    const error = await rejection(fencedPutObject(viaProxy, { Bucket, Key }, { term: 2, data: "A" }));
    expect(error).toBeInstanceOf(LeaseValidationError);
    expect((error as Error).message).toMatch(
      /options\.data: is the very bytes the object holds \(ETag "[0-9a-f]{32}"\) under term 1: S3's ETag is their MD5/,
    );
    expect(proxy.count("put")).toBe(puts);
    expect(await read(Key)).toMatchObject({ body: "A", metadata: { [DEFAULT_TERM_KEY]: "1" } });
    // The same leader may repeat its own bytes (equal term), and bytes that carry the new term pass.
    await fencedPutObject(viaProxy, { Bucket, Key }, { term: 1, data: "A" });
    await fencedPutObject(viaProxy, { Bucket, Key }, { term: 2, data: "A\nterm 2" });
    expect(await rejection(fencedPutObject(viaProxy, { Bucket, Key }, { term: 1, data: "A" }))).toMatchObject({
      name: "StaleTermError",
      seenTerm: 2,
    });
    viaProxy.destroy();
  });

  it("a PutObject that applied but whose answer was lost, retried by the SDK into 412, is recognised as ours", async () => {
    const Key = uniqueName("retried");
    await fencedPutObject(client, { Bucket, Key }, { term: 1, data: "0" });
    const retrying = s3TestClient(proxy.endpoint, 3);
    proxy.failNextPut("reset-after-apply");
    const before = proxy.count("put");
    let calls = 0;
    const result = await fencedPutObject(
      retrying,
      { Bucket, Key },
      {
        term: 1,
        data: (current) => {
          calls++;
          return String(Number(new TextDecoder().decode(current ?? new Uint8Array())) + 1);
        },
      },
    );
    retrying.destroy();
    expect(proxy.count("put") - before).toBe(2); // the SDK retried, and the retry met 412
    expect(calls).toBe(1); // not applied twice
    expect(result).toEqual({ etag: (await read(Key)).version, attempts: 1 });
    expect((await read(Key)).body).toBe("1");
  });

  it("S3's 409 ConditionalRequestConflict (another conditional write in progress) is read again, not a refusal", async () => {
    const Key = uniqueName("conflict");
    const viaProxy = s3TestClient(proxy.endpoint, 1);
    await fencedPutObject(viaProxy, { Bucket, Key }, { term: 1, data: "one" });
    proxy.failNextPut("conditional-conflict");
    const result = await fencedPutObject(viaProxy, { Bucket, Key }, { term: 2, data: "two" });
    viaProxy.destroy();
    expect(result.attempts).toBe(2);
    expect(await read(Key)).toMatchObject({ body: "two", metadata: { [DEFAULT_TERM_KEY]: "2" } });
  });

  it("rejects bad input and options naming the field, and sends nothing", async () => {
    const Key = uniqueName("invalid");
    const viaProxy = s3TestClient(proxy.endpoint, 1);
    proxy.resetCounts();
    const cases: Array<[unknown, unknown, string]> = [
      [{ Bucket, Key }, { term: 0, data: "x" }, "term: expected a term >= 1"],
      [{ Bucket, Key }, { term: 1 }, "data: expected a string, a Uint8Array or a function"],
      [{ Bucket, Key }, { term: 1, data: "x", termKey: "Bad Key" }, "termKey: expected 1-63 characters"],
      [{ Bucket, Key }, { term: 1, data: "x", maxAttempts: 0 }, "maxAttempts: expected at least 1"],
      [{ Bucket, Key }, { term: 1, data: "x", other: true }, "other: unknown field"],
      [{ Key }, { term: 1, data: "x" }, "input.Bucket: expected the object's bucket"],
      [{ Bucket, Key, Body: "x" }, { term: 1, data: "x" }, "input.Body: pass the content as options.data"],
      [{ Bucket, Key, IfMatch: '"x"' }, { term: 1, data: "x" }, "input.IfMatch: is set by the fence"],
      [
        { Bucket, Key, Metadata: { "Leasehold-Term": "9" } },
        { term: 1, data: "x" },
        "input.Metadata.Leasehold-Term: is reserved",
      ],
      [
        { Bucket, Key, Metadata: { [WRITE_ID_KEY]: "w" } },
        { term: 1, data: "x" },
        `input.Metadata.${WRITE_ID_KEY}: is reserved`,
      ],
    ];
    for (const [input, options, message] of cases) {
      const error = await rejection(fencedPutObject(viaProxy, input as never, options as never));
      expect(error).toBeInstanceOf(LeaseValidationError);
      expect((error as Error).message).toContain(message);
    }
    expect(proxy.seen).toEqual([]);
    viaProxy.destroy();
  });
});
