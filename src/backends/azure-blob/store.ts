/**
 * Azure Blob Storage store (`leasehold/stores/azure-blob`), on @azure/storage-blob: an adapter over
 * the object-store core (../object-store/store.ts, which states the contract). One block blob per lease;
 * the blob's ETag is the revision: a create is one Put Blob with `If-None-Match: *`, a replace one
 * Put Blob with `If-Match: <etag>`. Azure applies either atomically or refuses: 412
 * `ConditionNotMet` (stale ETag, or an If-Match on a blob that is gone) or 409 `BlobAlreadyExists`
 * (create of an existing blob); both are conflicts. Azure ETags are not content hashes.
 *
 * Retries: the clients this store creates make exactly one try per request
 * (`retryOptions.maxTries: 1`). A caller's own `ContainerClient` may retry and the SDK does not say
 * how many tries it made, so with it a conflict whose record cannot be read, and every other write
 * error, is ambiguous.
 *
 * Errors: timeouts, aborts, lost connections, 5xx (`ServerBusy`, `OperationTimedOut`, ...), 408
 * and 429 are ambiguous on writes; other 4xx (missing container, authorization, an Azure blob
 * lease on the blob) are not, with the store's own client.
 *
 * `list(prefix)`: List Blobs (flat) under the prefix, which Azure returns in name order. Azure has
 * no "start after": names up to `startAfter` are listed and skipped. Permissions: read, write and
 * list on the container's blobs, e.g. the role "Storage Blob Data Contributor" on the container;
 * see docs/azure-blob.md. Node only (tested there).
 */
import type { BlockBlobClient, ContainerClient, StoragePipelineOptions } from "@azure/storage-blob";
import { validate } from "../../lease.js";
import { importPeer } from "../../peer.js";
import { ETAG_PATTERN, parseEtag } from "../object-store/etag.js";
import { DEFAULT_OBJECT_TIMEOUT_MS } from "../object-store/fields.js";
import type { ObjectFailure, ObjectService, ObjectVersion } from "../object-store/store.js";
import { OBJECT_PAGE_SIZE, ObjectStore } from "../object-store/store.js";
import { type AzureBlobStoreOptions, azureBlobOptionsSchema } from "./backend.js";

export type { AzureBlobStoreOptions, AzureCredential } from "./backend.js";

const {
  AnonymousCredential,
  BlobServiceClient: BlobServiceClientClass,
  StorageSharedKeyCredential,
} = await importPeer("@azure/storage-blob", "@azure/storage-blob@12", () => import("@azure/storage-blob"));

const BLOB_CLIENT_CACHE = 1000;
const utf8 = new TextEncoder();

class AzureService implements ObjectService {
  readonly service = "Azure";
  readonly words = { read: "Get Blob", write: "Put Blob", object: "blob", revision: "an ETag" };
  private readonly blobs = new Map<string, BlockBlobClient>();

  constructor(
    readonly container: ContainerClient,
    /** True only for the client this store created: then nothing is ever sent twice. */
    private readonly sendsOnce: boolean,
    /** Client-side limit per request (the SDK's own `tryTimeoutInMs` is only a hint to the server). */
    private readonly timeoutMs: number | undefined,
  ) {}

  /** The blob's URL for messages, without the query string (a SAS token is a credential). */
  where(key: string): string {
    return `${this.container.url.split("?")[0]}/${key}`;
  }

  parseRevision(revision: string): string {
    return parseEtag(revision, "Azure");
  }

  async read(key: string, signal?: AbortSignal): Promise<ObjectVersion | null> {
    try {
      const out = await this.withDeadline(signal, async (abortSignal) => {
        const response = await this.blob(key).download(0, undefined, {
          maxRetryRequests: 0,
          ...(abortSignal ? { abortSignal } : {}),
        });
        return { etag: response.etag, body: await bodyText(response) };
      });
      if (out.etag === undefined || !ETAG_PATTERN.test(out.etag)) throw new Error("answered without an ETag");
      return { body: out.body, revision: out.etag };
    } catch (error) {
      const failure = this.describe(error);
      if (failure.status === 404 && failure.code === "BlobNotFound") return null;
      throw error;
    }
  }

  async write(key: string, body: string, expected: string | null, signal?: AbortSignal): Promise<string | undefined> {
    const bytes = utf8.encode(body);
    const out = await this.withDeadline(signal, (abortSignal) =>
      this.blob(key).upload(bytes, bytes.byteLength, {
        conditions: expected === null ? { ifNoneMatch: "*" } : { ifMatch: expected },
        blobHTTPHeaders: { blobContentType: "application/json", blobCacheControl: "no-store" },
        ...(abortSignal ? { abortSignal } : {}),
      }),
    );
    return out.etag !== undefined && ETAG_PATTERN.test(out.etag) ? out.etag : undefined;
  }

  /** Blob names under `namePrefix` in name order, one page at a time (Azure cannot start after a name). */
  async *keys(namePrefix: string): AsyncIterable<string> {
    const pages = this.container.listBlobsFlat({ prefix: namePrefix }).byPage({ maxPageSize: OBJECT_PAGE_SIZE });
    for (;;) {
      const page = await pages.next();
      if (page.done) return;
      for (const item of page.value.segment.blobItems) yield item.name;
    }
  }

  /** A RestError (or an abort/network error): HTTP status, Azure's error code, and a readable line. */
  describe(error: unknown): ObjectFailure {
    const e = error as {
      name?: unknown;
      statusCode?: unknown;
      code?: unknown;
      message?: unknown;
      details?: { errorCode?: unknown };
    } | null;
    const status = typeof e?.statusCode === "number" ? e.statusCode : undefined;
    const code =
      typeof e?.details?.errorCode === "string" ? e.details.errorCode : typeof e?.code === "string" ? e.code : "";
    const name = typeof e?.name === "string" ? e.name : "Error";
    // Azure's messages repeat a RequestId and Time on extra lines: keep the first line.
    const text = (typeof e?.message === "string" ? e.message : String(error)).split("\n")[0];
    const parts = [status === undefined ? undefined : `HTTP ${status}`, code || undefined].filter(Boolean).join(" ");
    // A caller's client may have retried: an earlier try may have applied before this answer.
    return { status, code, message: `${name}: ${text}${parts ? ` (${parts})` : ""}`, retried: !this.sendsOnce };
  }

  /** 412 ConditionNotMet (stale ETag, or gone) and 409 BlobAlreadyExists (create): the condition was refused. */
  refusal(failure: ObjectFailure): "conflict" | undefined {
    if (failure.status === 412 && (failure.code === "ConditionNotMet" || failure.code === "")) return "conflict";
    return failure.status === 409 && failure.code === "BlobAlreadyExists" ? "conflict" : undefined;
  }

  /**
   * Runs one request under the caller's signal and this store's timeout. A request cut off by the
   * timeout fails with a `TimeoutError` naming the limit (for a write: ambiguous, it may still apply).
   */
  private async withDeadline<T>(
    signal: AbortSignal | undefined,
    run: (signal: AbortSignal | undefined) => Promise<T>,
  ): Promise<T> {
    const limit = this.timeoutMs;
    if (limit === undefined) return run(signal);
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, limit);
    const onAbort = () => controller.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await run(controller.signal);
    } catch (error) {
      if (!timedOut) throw error;
      throw Object.assign(new Error(`no answer within ${limit} ms`, { cause: error }), { name: "TimeoutError" });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * The blob client of one object, kept: building one parses its URL and sets up a pipeline, about
   * 0.1 ms, which would be most of the store's own cost per renewal. Bounded, as a list may name
   * many leases.
   */
  private blob(key: string): BlockBlobClient {
    let client = this.blobs.get(key);
    if (client === undefined) {
      if (this.blobs.size >= BLOB_CLIENT_CACHE) this.blobs.clear();
      client = this.container.getBlockBlobClient(key);
      this.blobs.set(key, client);
    }
    return client;
  }
}

export class AzureBlobStore extends ObjectStore {
  readonly container: ContainerClient;

  constructor(options: AzureBlobStoreOptions) {
    const o = validate("Azure Blob store options", azureBlobOptionsSchema, options);
    let container: ContainerClient;
    if (typeof o.container !== "string") {
      container = o.container;
    } else {
      // One try per request: a retried conditional PUT whose first try applied would fail its own
      // condition, turning a success into an apparent conflict. The elector retries instead.
      const pipeline: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };
      const sas = o.sasToken?.replace(/^\?/, "");
      const service =
        o.connectionString !== undefined
          ? BlobServiceClientClass.fromConnectionString(o.connectionString, pipeline)
          : new BlobServiceClientClass(
              sas === undefined ? o.accountUrl! : `${o.accountUrl}?${sas}`,
              o.credential ??
                (o.accountKey === undefined
                  ? new AnonymousCredential()
                  : new StorageSharedKeyCredential(o.accountName!, o.accountKey)),
              pipeline,
            );
      container = service.getContainerClient(o.container);
    }
    const own = typeof o.container === "string";
    super(new AzureService(container, own, own ? (o.timeoutMs ?? DEFAULT_OBJECT_TIMEOUT_MS) : undefined), {
      prefix: o.prefix,
    });
    this.container = container;
  }
}

/** The body of a download as text (UTF-8). */
async function bodyText(out: DownloadBody): Promise<string> {
  return new TextDecoder("utf-8", { fatal: false }).decode(await bodyBytes(out));
}

/** What a Get Blob answer holds its body in: a Node stream on Node, a Blob in browsers and workerd. */
export interface DownloadBody {
  readableStreamBody?: NodeJS.ReadableStream;
  blobBody?: Promise<Blob>;
}

/** The body of a download, as bytes (also the Azure fence's, src/fencing/azure-blob.ts). */
export async function bodyBytes(out: DownloadBody): Promise<Uint8Array> {
  if (out.readableStreamBody) {
    const chunks: Uint8Array[] = [];
    for await (const chunk of out.readableStreamBody) {
      chunks.push(typeof chunk === "string" ? utf8.encode(chunk) : (chunk as Uint8Array));
    }
    const all = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
    let at = 0;
    for (const c of chunks) {
      all.set(c, at);
      at += c.byteLength;
    }
    return all;
  }
  if (out.blobBody) return new Uint8Array(await (await out.blobBody).arrayBuffer());
  return new Uint8Array();
}
