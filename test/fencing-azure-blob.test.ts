/**
 * docs/fencing.md, Azure Blob, against azurite: the recipe (examples/fencing/azure-blob.ts) and
 * `fencedWrite` (src/fencing/azure-blob.ts). The object fences' shared cases
 * (test/support/object-fence-suite.ts: stale writes refused, retries, corrupt terms, racing
 * writers), then what only Azure has: ETags that change on every write, an SDK retry of an
 * applied Put Blob through the fault proxy, metadata names that are C# identifiers.
 */
import { BlobServiceClient, type ContainerClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { saveReport, saveReportWithHelper } from "../examples/fencing/azure-blob.js";
import { bodyBytes } from "../src/backends/azure-blob/store.js";
import { LeaseValidationError } from "../src/errors.js";
import { DEFAULT_TERM_KEY, fencedWrite, StaleTermError, WRITE_ID_KEY } from "../src/fencing/azure-blob.js";
import { uniqueName } from "../src/testkit/store-contract.js";
import { AZURITE_ACCOUNT, AZURITE_KEY } from "./servers/azurite.server.js";
import { deposedLeaderWrites } from "./support/deposed-leader.js";
import { describeObjectFence } from "./support/object-fence-suite.js";
import { ObjectStoreProxy } from "./support/object-store-proxy.js";
import { rejection } from "./support/rejection.js";

const endpoint = process.env.AZURE_BLOB_ENDPOINT;
if (!endpoint) throw new Error("AZURE_BLOB_ENDPOINT is not set: test/servers/azurite.server.ts should have started");
const containerName = `fencing-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const credential = new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY);
/** A container client on `accountUrl`, one try per request unless `tries` says more. */
const containerAt = (accountUrl: string, tries = 1): ContainerClient =>
  new BlobServiceClient(accountUrl, credential, {
    retryOptions: { maxTries: tries, retryDelayInMs: 10, maxRetryDelayInMs: 50 },
  }).getContainerClient(containerName);
const container = containerAt(endpoint);

let proxy: ObjectStoreProxy;
let proxied: string;
beforeAll(async () => {
  await container.create();
  proxy = await ObjectStoreProxy.start(new URL(endpoint).origin, "azure");
  proxied = `${proxy.endpoint}/${AZURITE_ACCOUNT}`;
});
afterAll(async () => {
  await proxy?.close();
});

async function read(name: string) {
  const got = await container.getBlockBlobClient(name).download();
  return {
    body: new TextDecoder().decode(await bodyBytes(got)),
    metadata: { ...got.metadata } as Record<string, string>,
    version: got.etag ?? "",
  };
}

describe("Azure Blob recipe (examples/fencing/azure-blob.ts)", () => {
  it("creates the blob with its term, lets a newer term overwrite, refuses an older one", async () => {
    const blob = container.getBlockBlobClient(uniqueName("report"));
    expect(await saveReport(blob, "by term 1", 1)).toBe(true);
    expect(await saveReport(blob, "by term 2", 2)).toBe(true);
    expect(await saveReport(blob, "late, by term 1", 1)).toBe(false);
    expect(await read(blob.name)).toMatchObject({ body: "by term 2", metadata: { term: "2" } });
    expect(await saveReport(blob, "again by term 2", 2)).toBe(true);
    expect(await read(blob.name)).toMatchObject({ body: "again by term 2", metadata: { term: "2" } });
  });

  it("with terms from the library: the deposed leader's write is StaleTermError with the new term", async () => {
    const blob = container.getBlockBlobClient(uniqueName("report"));
    const outcome = await deposedLeaderWrites((writer, term) => saveReportWithHelper(blob, `by ${writer}`, term));
    expect(outcome).toMatchObject({ oldTerm: 1, newTerm: 2, oldSignalAborted: true });
    expect(outcome.staleError).toBeInstanceOf(StaleTermError);
    expect(outcome.staleError).toMatchObject({ term: 1, seenTerm: 2 });
    expect((outcome.staleError as Error).message).toContain(`fenced write to ${endpoint}/${containerName}/`);
    expect(await read(blob.name)).toMatchObject({ body: "by new", metadata: { [DEFAULT_TERM_KEY]: "2" } });
  });
});

describeObjectFence("Azure Blob fencedWrite (azurite)", {
  write: async (name, options) => {
    const { etag, attempts } = await fencedWrite(container.getBlockBlobClient(name), options);
    return { version: etag, attempts };
  },
  read,
  putRaw: async (name, body, metadata) => {
    await container.getBlockBlobClient(name).upload(body, Buffer.byteLength(body), { metadata });
  },
  resource: (name) => `${endpoint}/${containerName}/${name}`,
  termKey: DEFAULT_TERM_KEY,
  writeIdKey: WRITE_ID_KEY,
});

describe("fencedWrite on Azure Blob: what only Azure has", () => {
  it("an ETag changes on every write, the same bytes too: a new leader may write them again (no ABA)", async () => {
    const blob = container.getBlockBlobClient(uniqueName("same"));
    const first = await fencedWrite(blob, { term: 1, data: "A" });
    const second = await fencedWrite(blob, { term: 2, data: "A" });
    expect(second.etag).not.toBe(first.etag);
    // The deposed leader of term 1 holds the first ETag: a bare If-Match on it is refused.
    const stale = await rejection(blob.upload("late", 4, { conditions: { ifMatch: first.etag } }));
    expect(stale).toMatchObject({ statusCode: 412 });
    expect(await rejection(fencedWrite(blob, { term: 1, data: "late" }))).toMatchObject({
      name: "StaleTermError",
      seenTerm: 2,
    });
    expect(await read(blob.name)).toMatchObject({ body: "A", metadata: { [DEFAULT_TERM_KEY]: "2" } });
  });

  it("a Put Blob that applied but whose answer was lost, retried by the SDK into 412, is recognised as ours", async () => {
    const name = uniqueName("retried");
    await fencedWrite(container.getBlockBlobClient(name), { term: 1, data: "0" });
    const retrying = containerAt(proxied, 4).getBlockBlobClient(name);
    proxy.failNextPut("reset-after-apply");
    const before = proxy.count("put");
    let calls = 0;
    const result = await fencedWrite(retrying, {
      term: 1,
      data: (current) => {
        calls++;
        return String(Number(new TextDecoder().decode(current ?? new Uint8Array())) + 1);
      },
    });
    expect(proxy.count("put") - before).toBe(2); // the SDK retried, and the retry met 412
    expect(calls).toBe(1); // not applied twice
    expect(result).toEqual({ etag: (await read(name)).version, attempts: 1 });
    expect((await read(name)).body).toBe("1");
  });

  it("rejects bad options naming the field, and sends nothing", async () => {
    const blob = containerAt(proxied).getBlockBlobClient(uniqueName("invalid"));
    proxy.resetCounts();
    const cases: Array<[unknown, string]> = [
      [{ term: 0, data: "x" }, "term: expected a term >= 1"],
      [{ term: 1, data: 5 }, "data: expected a string, a Uint8Array or a function"],
      [{ term: 1, data: "x", termKey: "leasehold-term" }, "termKey: expected 1-63 characters of A-Z a-z 0-9 _"],
      [{ term: 1, data: "x", metadata: { "my-key": "v" } }, "metadata.my-key: expected 1-63 characters"],
      [{ term: 1, data: "x", metadata: { Leasehold_Term: "9" } }, "metadata.Leasehold_Term: is reserved"],
      [{ term: 1, data: "x", metadata: { [WRITE_ID_KEY]: "w" } }, `metadata.${WRITE_ID_KEY}: is reserved`],
      [{ term: 1, data: "x", termKey: WRITE_ID_KEY }, "termKey: is reserved"],
      [{ term: 1, data: "x", other: true }, "other: unknown field"],
    ];
    for (const [options, message] of cases) {
      const error = await rejection(fencedWrite(blob, options as never));
      expect(error).toBeInstanceOf(LeaseValidationError);
      expect((error as Error).message).toContain(message);
    }
    expect(await rejection(fencedWrite({} as never, { term: 1, data: "x" }))).toMatchObject({
      message: expect.stringContaining("blob: expected a BlockBlobClient"),
    });
    expect(proxy.seen).toEqual([]);
  });
});
