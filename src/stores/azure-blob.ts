/**
 * Azure Blob Storage store (`leasehold/stores/azure-blob`), on @azure/storage-blob.
 *
 * Contract: one block blob per lease, `<prefix><name>.json`, holding the record as JSON. The
 * blob's ETag is the revision: a create is one Put Blob with `If-None-Match: *`, a replace one Put
 * Blob with `If-Match: <etag>`. Azure applies either atomically or refuses: 412 `ConditionNotMet`
 * (stale ETag, or an If-Match on a blob that is gone) or 409 `BlobAlreadyExists` (create of an
 * existing blob); both become a `LeaseConflictError`. A renewal is that one PUT and no read: the
 * ETag comes back with the answer. Azure ETags are not content hashes, but every body is unique
 * anyway (the `writeId`), and ETags are not ordered: the fencing token is the record's `term`.
 *
 * Conflicts: the refusal carries no record, so the store reads the blob (one GET) and the
 * `LeaseConflictError` carries it. The store only reports: it never decides from that record
 * whether its own write applied; the elector does (by `writeId`).
 *
 * Retries: a conditional PUT that applied but whose answer was lost comes back as a conflict when
 * the SDK sends it again. The clients this store creates make exactly one try per request
 * (`retryOptions.maxTries: 1`). A caller's own `ContainerClient` may retry and the SDK does not say
 * how many tries it made, so with it: a conflict still carries the current record (which may be
 * this very write), a conflict whose record cannot be read is ambiguous, and every other write
 * error is ambiguous.
 *
 * Errors: timeouts, aborts, lost connections, 5xx (`ServerBusy`, `OperationTimedOut`, ...), 408
 * and 429 are `LeaseStoreError` with `ambiguous: true` on writes; other 4xx (missing container,
 * authorization, an Azure blob lease on the blob) are not, with the store's own client. Reads
 * never change anything, so their errors are never ambiguous. A blob leasehold cannot parse is a
 * `LeaseCorruptError`, never overwritten.
 *
 * `list(prefix)`: List Blobs (flat) under the prefix, which Azure returns in name order, then one
 * GET per lease for body and ETag together. Azure has no "start after": names up to `startAfter`
 * are listed and skipped.
 *
 * Permissions: read, write and list on the container's blobs, e.g. the role "Storage Blob Data
 * Contributor" on the container; see docs/azure-blob.md. Node only (tested there).
 */
import type {
  AnonymousCredential,
  BlockBlobClient,
  ContainerClient,
  StoragePipelineOptions,
  StorageSharedKeyCredential,
} from "@azure/storage-blob";
import {
  type FieldIssue,
  LeaseConflictError,
  LeaseCorruptError,
  LeaseStoreError,
  LeaseValidationError,
} from "../errors.js";
import {
  type CallOptions,
  type LeaseRecord,
  type LeaseStore,
  type ListOptions,
  parseRecord,
  type Revision,
  type Stored,
  validateName,
  validatePrefix,
  validateRecord,
} from "../lease.js";
import { importPeer } from "../peer.js";
import { ETAG_PATTERN, parseEtag } from "./etag.js";
import { listInNameOrder, OBJECT_PREFIX_PATTERN, objectKey } from "./object-keys.js";
import { readWithOneRetryOnReset, writeRefused } from "./request-outcome.js";

const { BlobServiceClient: BlobServiceClientClass } = await importPeer(
  "@azure/storage-blob",
  "@azure/storage-blob@12",
  () => import("@azure/storage-blob"),
);

/**
 * What `new BlobServiceClient(url, credential)` accepts: a shared key, a TokenCredential (e.g.
 * `DefaultAzureCredential` from @azure/identity), or anonymous access with a SAS in `accountUrl`.
 */
export type AzureCredential =
  | StorageSharedKeyCredential
  | AnonymousCredential
  | {
      getToken(
        scopes: string | string[],
        options?: object,
      ): Promise<{ token: string; expiresOnTimestamp: number } | null>;
    };

export interface AzureBlobStoreOptions {
  /**
   * Container name (then give `connectionString`, or `accountUrl` with `credential`), or your own
   * `ContainerClient` (credentials, retries: used as it is).
   */
  container: string | ContainerClient;
  /** An account's connection string (e.g. AZURE_STORAGE_CONNECTION_STRING) for the client this store creates. */
  connectionString?: string;
  /** The account's blob endpoint, e.g. "https://ACCOUNT.blob.core.windows.net" (an emulator's: with the account in the path). */
  accountUrl?: string;
  /** With `accountUrl`: a `StorageSharedKeyCredential`, or a TokenCredential (e.g. DefaultAzureCredential). */
  credential?: AzureCredential;
  /** Blob name prefix for every lease; default "leases/". Blobs are `<prefix><name>.json`. */
  prefix?: string;
  /** Per-request timeout in ms for the client this store creates (a write that times out is ambiguous); default 10000. */
  timeoutMs?: number;
}

const DEFAULT_PREFIX = "leases/";
const PAGE_SIZE = 200;
const BLOB_CLIENT_CACHE = 1000;
/** Azure container names: 3-63 characters of a-z 0-9 -, starting with a letter or digit, no "--". */
const CONTAINER_PATTERN = /^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;
const utf8 = new TextEncoder();

interface RestFailure {
  status: number | undefined;
  /** Azure's error code (x-ms-error-code), or a Node error code such as ECONNRESET. */
  code: string;
  message: string;
}

export class AzureBlobStore implements LeaseStore {
  readonly container: ContainerClient;
  readonly prefix: string;
  /** True only for the client this store created: then nothing is ever sent twice. */
  private readonly writesNeverRetry: boolean;
  /** Client-side limit per request (the SDK's own `tryTimeoutInMs` is only a hint to the server). */
  private readonly timeoutMs: number | undefined;
  private readonly blobs = new Map<string, BlockBlobClient>();

  constructor(options: AzureBlobStoreOptions) {
    const issues = checkOptions(options);
    if (issues.length > 0) throw new LeaseValidationError("Azure Blob store options", issues);
    this.prefix = options.prefix ?? DEFAULT_PREFIX;
    if (typeof options.container !== "string") {
      this.container = options.container;
      this.writesNeverRetry = false;
      this.timeoutMs = undefined;
      return;
    }
    this.timeoutMs = options.timeoutMs ?? 10_000;
    // One try per request: a retried conditional PUT whose first try applied would fail its own
    // condition, turning a success into an apparent conflict. The elector retries instead.
    const pipeline: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };
    const service =
      options.connectionString !== undefined
        ? BlobServiceClientClass.fromConnectionString(options.connectionString, pipeline)
        : new BlobServiceClientClass(options.accountUrl!, options.credential, pipeline);
    this.container = service.getContainerClient(options.container);
    this.writesNeverRetry = true;
  }

  async get(name: string, options?: CallOptions): Promise<Stored | null> {
    validateName(name);
    return this.read(name, options?.signal);
  }

  async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const record = validateRecord(next);
    const conditions = expected === null ? { ifNoneMatch: "*" } : { ifMatch: parseEtag(expected, "Azure") };
    const signal = options?.signal;
    if (signal?.aborted) {
      throw new LeaseStoreError(`Azure Put Blob of ${this.where(record.name)} aborted before it was sent`, {
        ambiguous: false,
        cause: signal.reason,
      });
    }
    const body = utf8.encode(JSON.stringify(record));
    let etag: string | undefined;
    try {
      const out = await this.withDeadline(signal, (abortSignal) =>
        this.blob(record.name).upload(body, body.byteLength, {
          conditions,
          blobHTTPHeaders: { blobContentType: "application/json", blobCacheControl: "no-store" },
          ...(abortSignal ? { abortSignal } : {}),
        }),
      );
      etag = out.etag;
    } catch (error) {
      const failure = describeFailure(error);
      if (isConflict(failure)) return this.conflict(record.name, error, signal);
      throw this.writeError(record.name, failure, error);
    }
    if (etag === undefined || !ETAG_PATTERN.test(etag)) {
      throw new LeaseStoreError(`Azure Put Blob of ${this.where(record.name)} answered without an ETag`, {
        ambiguous: true,
      });
    }
    return { record, revision: etag };
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<Stored> {
    validatePrefix(prefix);
    yield* listInNameOrder(this.names(this.prefix + prefix), this.prefix, prefix, options, (name) => this.read(name));
  }

  /** Blob names under `namePrefix` in name order, one page at a time. */
  private async *names(namePrefix: string): AsyncIterable<string> {
    const pages = this.container.listBlobsFlat({ prefix: namePrefix }).byPage({ maxPageSize: PAGE_SIZE });
    for (;;) {
      let page: Awaited<ReturnType<typeof pages.next>>;
      try {
        page = await pages.next();
      } catch (error) {
        throw new LeaseStoreError(
          `Azure List Blobs of ${this.container.url.split("?")[0]}/${namePrefix}* failed: ${describeFailure(error).message}`,
          { ambiguous: false, cause: error },
        );
      }
      if (page.done) return;
      for (const item of page.value.segment.blobItems) yield item.name;
    }
  }

  /** One GET: body and ETag of the same version; sent once more after a reset connection (./request-outcome.ts). */
  private async read(name: string, signal?: AbortSignal): Promise<Stored | null> {
    return readWithOneRetryOnReset(() => this.readOnce(name, signal), signal);
  }

  private async readOnce(name: string, signal?: AbortSignal): Promise<Stored | null> {
    const where = `Azure Get Blob of ${this.where(name)}`;
    let body: string;
    let etag: string | undefined;
    try {
      const out = await this.withDeadline(signal, async (abortSignal) => {
        const response = await this.blob(name).download(0, undefined, {
          maxRetryRequests: 0,
          ...(abortSignal ? { abortSignal } : {}),
        });
        return { etag: response.etag, body: await bodyText(response) };
      });
      etag = out.etag;
      body = out.body;
    } catch (error) {
      const failure = describeFailure(error);
      if (failure.status === 404 && failure.code === "BlobNotFound") return null;
      throw new LeaseStoreError(`${where} failed: ${failure.message}`, { ambiguous: false, cause: error });
    }
    if (etag === undefined || !ETAG_PATTERN.test(etag)) {
      throw new LeaseStoreError(`${where} answered without an ETag`, { ambiguous: false });
    }
    return { record: parseRecord(name, body), revision: etag };
  }

  /**
   * A refused condition. The answer carries no record, so read it. When that read fails, the
   * conflict is certain only if the write was sent once (this store's own client).
   */
  private async conflict(name: string, cause: unknown, signal?: AbortSignal): Promise<never> {
    let current: Stored | null;
    try {
      current = await this.read(name, signal);
    } catch (readError) {
      if (readError instanceof LeaseCorruptError) throw readError; // never overwritten
      if (!this.writesNeverRetry) {
        throw new LeaseStoreError(
          `Azure Put Blob of ${this.where(name)} was refused its condition, possibly on an SDK retry, and reading the blob back failed: an earlier try may have applied`,
          { ambiguous: true, cause: readError },
        );
      }
      throw new LeaseConflictError(name, undefined, { cause });
    }
    throw new LeaseConflictError(name, current, { cause });
  }

  private writeError(name: string, failure: RestFailure, cause: unknown): LeaseStoreError {
    const rejected = writeRefused(failure.status, failure.code);
    // A caller's client may have retried: an earlier try may have applied before this answer.
    const ambiguous = !(rejected && this.writesNeverRetry);
    const outcome = ambiguous ? "the write may or may not have applied" : "nothing was written";
    return new LeaseStoreError(`Azure Put Blob of ${this.where(name)} failed: ${failure.message}; ${outcome}`, {
      ambiguous,
      cause,
    });
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
   * The blob client of one lease, kept: building one parses its URL and sets up a pipeline, about
   * 0.1 ms, which would be most of the store's own cost per renewal. Bounded, as a list may name
   * many leases.
   */
  private blob(name: string): BlockBlobClient {
    let client = this.blobs.get(name);
    if (client === undefined) {
      if (this.blobs.size >= BLOB_CLIENT_CACHE) this.blobs.clear();
      client = this.container.getBlockBlobClient(objectKey(this.prefix, name));
      this.blobs.set(name, client);
    }
    return client;
  }

  /** The blob's URL for messages, without the query string (a SAS token is a credential). */
  private where(name: string): string {
    return `${this.container.url.split("?")[0]}/${objectKey(this.prefix, name)}`;
  }
}

/** 412 ConditionNotMet (stale ETag, or gone) and 409 BlobAlreadyExists (create): the condition was refused. */
function isConflict(failure: RestFailure): boolean {
  if (failure.status === 412) return failure.code === "ConditionNotMet" || failure.code === "";
  return failure.status === 409 && failure.code === "BlobAlreadyExists";
}

function checkOptions(options: AzureBlobStoreOptions): FieldIssue[] {
  if (typeof options !== "object" || options === null) {
    return [{ path: "", message: "expected an object with at least a container" }];
  }
  const issues: FieldIssue[] = [];
  const { container } = options;
  if (typeof container === "string") {
    if (!CONTAINER_PATTERN.test(container)) {
      issues.push({
        path: "container",
        message: `expected an Azure container name (3-63 characters of a-z 0-9 -, no "--", starting and ending with a letter or digit), got ${JSON.stringify(container)}`,
      });
    }
    const byString = options.connectionString !== undefined;
    const byUrl = options.accountUrl !== undefined;
    if (byString === byUrl) {
      issues.push({
        path: byString ? "accountUrl" : "connectionString",
        message: byString
          ? "expected either connectionString or accountUrl, not both"
          : "expected connectionString, or accountUrl with credential",
      });
    }
    if (byString && (typeof options.connectionString !== "string" || options.connectionString === "")) {
      issues.push({ path: "connectionString", message: "expected a non-empty connection string" });
    }
    if (byUrl && !isHttpUrl(options.accountUrl)) {
      issues.push({
        path: "accountUrl",
        message: `expected an http(s) URL, got ${JSON.stringify(options.accountUrl)}`,
      });
    }
    if (byUrl && options.credential === undefined) {
      issues.push({
        path: "credential",
        message:
          "expected a StorageSharedKeyCredential or a TokenCredential (e.g. DefaultAzureCredential) with accountUrl",
      });
    }
  } else if (typeof (container as ContainerClient | null)?.getBlockBlobClient !== "function") {
    issues.push({
      path: "container",
      message: "expected a container name or a ContainerClient from @azure/storage-blob",
    });
  } else {
    for (const field of ["connectionString", "accountUrl", "credential", "timeoutMs"] as const) {
      if (options[field] !== undefined) {
        issues.push({
          path: field,
          message: "only applies when container is a name; configure your own client instead",
        });
      }
    }
  }
  if (
    options.prefix !== undefined &&
    (typeof options.prefix !== "string" || !OBJECT_PREFIX_PATTERN.test(options.prefix))
  ) {
    issues.push({ path: "prefix", message: "expected at most 512 printable ASCII characters without spaces" });
  }
  if (options.timeoutMs !== undefined && !(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
    issues.push({ path: "timeoutMs", message: `expected a positive number of milliseconds, got ${options.timeoutMs}` });
  }
  return issues;
}

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== "string") return false;
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

/** The body of a download: a Node stream on Node, a Blob in browsers and workerd. */
async function bodyText(out: {
  readableStreamBody?: NodeJS.ReadableStream;
  blobBody?: Promise<Blob>;
}): Promise<string> {
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
    return new TextDecoder("utf-8", { fatal: false }).decode(all);
  }
  if (out.blobBody) return (await out.blobBody).text();
  return "";
}

/** A RestError (or an abort/network error): HTTP status, Azure's error code, and a readable line. */
function describeFailure(error: unknown): RestFailure {
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
  return { status, code, message: `${name}: ${text}${parts ? ` (${parts})` : ""}` };
}
