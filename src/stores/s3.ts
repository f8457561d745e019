/**
 * Amazon S3 store (`leasehold/stores/s3`), on @aws-sdk/client-s3 and S3's conditional writes.
 *
 * Contract: one object per lease, `<prefix><name>.json`, holding the record as JSON. The object's
 * ETag is the revision: a create is one `PutObject` with `If-None-Match: *`, a replace one
 * `PutObject` with `If-Match: <etag>`, and S3 applies either atomically or answers 412
 * `PreconditionFailed`. A renewal is that one PUT and no read: the ETag comes back with the answer.
 * Every body is unique (it carries the write's random `writeId`), which matters because an ETag is
 * a content hash: writing A, then B, then A again would bring A's ETag back, and a stale If-Match
 * would succeed (the ABA case in the store contract). ETags are not ordered; the fencing token is
 * the record's `term`.
 *
 * Conflicts: S3's 412 carries no record, so the store reads the object (one GET) and the
 * `LeaseConflictError` carries it. An If-Match on an object that is gone answers 404 `NoSuchKey`:
 * a conflict whose current record is `null`. The store only reports: it never decides from the
 * record it read whether its own write applied; that is the elector's job (by `writeId`).
 *
 * Retries: a conditional PUT that applied but whose answer was lost comes back as 412 when the SDK
 * sends it again. The `S3Client` this store creates therefore makes exactly one attempt
 * (`maxAttempts: 1`): a 412 from it is always someone else's write. A caller's own client may
 * retry; the store sees how many attempts the SDK made (`$metadata.attempts`), and after more than
 * one a conflict still carries the current record (which may be this very write), while an error
 * after more than one attempt is always ambiguous.
 *
 * Errors: timeouts, aborts, lost connections, 5xx, 408 and throttling are `LeaseStoreError` with
 * `ambiguous: true` on writes. S3's 409 `ConditionalRequestConflict` (another conditional write to
 * the object was in progress) on a first attempt proves this write did not apply: a plain,
 * non-ambiguous `LeaseStoreError` the elector retries like any other; after an SDK retry it is
 * ambiguous (the earlier attempt may be the write in progress). Other 4xx on a first attempt (no
 * such bucket, access denied) are not ambiguous. Reads never change anything, so their errors are
 * never ambiguous. An object leasehold cannot parse is a `LeaseCorruptError`, never overwritten.
 *
 * `list(prefix)`: `ListObjectsV2` under the prefix (general purpose buckets list in key order),
 * then one GET per lease for body and ETag together; see object-keys.ts for the name order.
 *
 * Permissions: `s3:GetObject`, `s3:PutObject` on `<bucket>/<prefix>*` (If-Match needs GetObject
 * too) and `s3:ListBucket` for `list`. See docs/s3.md. Runs on Node and in workerd (the SDK's
 * fetch build).
 */
import type { S3Client, S3ClientConfig } from "@aws-sdk/client-s3";
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
import { listInNameOrder, listStartKey, OBJECT_PREFIX_PATTERN, objectKey } from "./object-keys.js";
import { readWithOneRetryOnReset, writeRefused } from "./request-outcome.js";

const {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client: S3ClientClass,
} = await importPeer("@aws-sdk/client-s3", "@aws-sdk/client-s3@3", () => import("@aws-sdk/client-s3"));

export interface S3StoreOptions {
  /** Bucket name (a general purpose bucket: listing relies on key order). */
  bucket: string;
  /** Object key prefix for every lease; default "leases/". Objects are `<prefix><name>.json`. */
  prefix?: string;
  /**
   * Your own client (credentials, retries, middleware); the store never destroys it. Default: a
   * new `S3Client` from `region`, `endpoint`, `forcePathStyle`, `credentials`, with one attempt
   * per request.
   */
  client?: S3Client;
  /** Region for the client this store creates (default: the SDK's, e.g. AWS_REGION). */
  region?: string;
  /** Endpoint for the client this store creates, e.g. an S3-compatible server's "http://127.0.0.1:7070". */
  endpoint?: string;
  /** Path-style URLs (`endpoint/bucket/key`) for the client this store creates; most S3-compatible servers need it. */
  forcePathStyle?: boolean;
  /** Credentials for the client this store creates (default: the SDK's provider chain). */
  credentials?: S3ClientConfig["credentials"];
  /** Per-request timeout in ms for the client this store creates (a write that times out is ambiguous); default 10000. */
  timeoutMs?: number;
}

const DEFAULT_PREFIX = "leases/";
const PAGE_SIZE = 200;
/** S3 bucket names: 3-63 characters of a-z 0-9 . - starting and ending with a letter or digit. */
const BUCKET_PATTERN = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const THROTTLING = new Set(["SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded"]);

interface SdkFailure {
  name: string;
  status: number | undefined;
  attempts: number;
  code: string;
  /**
   * True when the SDK failed before the request reached its retry loop (no `$metadata`): a missing
   * region, credentials that could not be loaded. Nothing was sent.
   */
  unsent: boolean;
  /** "Name: message (HTTP status)", for error messages. */
  message: string;
}

export class S3Store implements LeaseStore {
  readonly bucket: string;
  readonly prefix: string;
  private readonly client: S3Client;
  /** Only a client this store created is destroyed by `close()`. */
  private readonly ownsClient: boolean;

  constructor(options: S3StoreOptions) {
    const issues = checkOptions(options);
    if (issues.length > 0) throw new LeaseValidationError("S3 store options", issues);
    this.bucket = options.bucket;
    this.prefix = options.prefix ?? DEFAULT_PREFIX;
    if (options.client) {
      this.client = options.client;
      this.ownsClient = false;
    } else {
      const timeout = options.timeoutMs ?? 10_000;
      this.client = new S3ClientClass({
        // One attempt: a retried conditional PUT whose first attempt applied would fail its own
        // condition, turning a success into an apparent conflict. The elector retries instead.
        maxAttempts: 1,
        // throwOnRequestTimeout: without it the Node handler only logs a warning when the time is up.
        requestHandler: { requestTimeout: timeout, connectionTimeout: timeout, throwOnRequestTimeout: true },
        ...(options.region === undefined ? {} : { region: options.region }),
        ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
        ...(options.forcePathStyle === undefined ? {} : { forcePathStyle: options.forcePathStyle }),
        ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
      });
      this.ownsClient = true;
    }
  }

  async get(name: string, options?: CallOptions): Promise<Stored | null> {
    validateName(name);
    return this.read(name, options?.signal);
  }

  async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const record = validateRecord(next);
    const condition = expected === null ? { IfNoneMatch: "*" } : { IfMatch: parseEtag(expected, "S3") };
    const signal = options?.signal;
    if (signal?.aborted) {
      throw new LeaseStoreError(`S3 PutObject of ${this.where(record.name)} aborted before it was sent`, {
        ambiguous: false,
        cause: signal.reason,
      });
    }
    let etag: string | undefined;
    try {
      const out = await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: objectKey(this.prefix, record.name),
          Body: JSON.stringify(record),
          ContentType: "application/json",
          CacheControl: "no-store",
          ...condition,
        }),
        signal ? { abortSignal: signal } : {},
      );
      etag = out.ETag;
    } catch (error) {
      const failure = describeFailure(error);
      if (failure.status === 412) return this.conflict(record.name, failure, error, signal);
      // If-Match on an object that no longer exists: nothing to replace, and nothing was written.
      if (failure.status === 404 && failure.name === "NoSuchKey" && expected !== null) {
        throw new LeaseConflictError(record.name, null, { cause: error });
      }
      throw this.writeError(record.name, failure, error);
    }
    if (etag === undefined || !ETAG_PATTERN.test(etag)) {
      throw new LeaseStoreError(`S3 PutObject of ${this.where(record.name)} answered without an ETag`, {
        ambiguous: true,
      });
    }
    return { record, revision: etag };
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<Stored> {
    validatePrefix(prefix);
    const start = listStartKey(this.prefix, prefix, options.startAfter);
    yield* listInNameOrder(this.keys(this.prefix + prefix, start), this.prefix, prefix, options, (name) =>
      this.read(name),
    );
  }

  /** Destroys the client if this store created it. */
  async close(): Promise<void> {
    if (this.ownsClient) this.client.destroy();
  }

  /** Object keys under `keyPrefix` in key order, after `startAfter`, one page at a time. */
  private async *keys(keyPrefix: string, startAfter: string | undefined): AsyncIterable<string> {
    let token: string | undefined;
    do {
      const page = await this.readCall(`ListObjectsV2 of s3://${this.bucket}/${keyPrefix}*`, () =>
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: keyPrefix,
            MaxKeys: PAGE_SIZE,
            ...(token === undefined && startAfter !== undefined ? { StartAfter: startAfter } : {}),
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
        ),
      );
      for (const object of page.Contents ?? []) if (object.Key !== undefined) yield object.Key;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /** One GET: body and ETag of the same version; sent once more after a reset connection (./request-outcome.ts). */
  private async read(name: string, signal?: AbortSignal): Promise<Stored | null> {
    return readWithOneRetryOnReset(() => this.readOnce(name, signal), signal);
  }

  private async readOnce(name: string, signal?: AbortSignal): Promise<Stored | null> {
    const where = `S3 GetObject of ${this.where(name)}`;
    let body: string;
    let etag: string | undefined;
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: objectKey(this.prefix, name) }),
        signal ? { abortSignal: signal } : {},
      );
      etag = out.ETag;
      body = (await out.Body?.transformToString("utf-8")) ?? "";
    } catch (error) {
      const failure = describeFailure(error);
      if (failure.status === 404 && failure.name === "NoSuchKey") return null;
      throw new LeaseStoreError(`${where} failed: ${failure.message}`, { ambiguous: false, cause: error });
    }
    if (etag === undefined || !ETAG_PATTERN.test(etag)) {
      throw new LeaseStoreError(`${where} answered without an ETag`, { ambiguous: false });
    }
    return { record: parseRecord(name, body), revision: etag };
  }

  /**
   * A failed precondition. The answer carries no record, so read it. When that read fails, the
   * conflict is certain only if the SDK sent the write once; after a retry an earlier attempt may
   * have applied, so the outcome is unknown.
   */
  private async conflict(name: string, failure: SdkFailure, cause: unknown, signal?: AbortSignal): Promise<never> {
    let current: Stored | null;
    try {
      current = await this.read(name, signal);
    } catch (readError) {
      if (readError instanceof LeaseCorruptError) throw readError; // never overwritten
      if (failure.attempts > 1) {
        throw new LeaseStoreError(
          `S3 PutObject of ${this.where(name)} failed its precondition after ${failure.attempts} attempts, and reading the object back failed: an earlier attempt may have applied`,
          { ambiguous: true, cause: readError },
        );
      }
      throw new LeaseConflictError(name, undefined, { cause });
    }
    throw new LeaseConflictError(name, current, { cause });
  }

  private writeError(name: string, failure: SdkFailure, cause: unknown): LeaseStoreError {
    const retried = failure.attempts > 1;
    let ambiguous: boolean;
    let outcome: string;
    if (failure.status === 409 && failure.name === "ConditionalRequestConflict" && !retried) {
      ambiguous = false;
      outcome = "another conditional write to this object was in progress; this one did not apply (retry)";
    } else {
      const rejected = writeRefused(failure.status, failure.code) || failure.unsent;
      ambiguous = retried || !rejected || THROTTLING.has(failure.name);
      outcome = ambiguous ? "the write may or may not have applied" : "nothing was written";
    }
    const status = failure.status === undefined ? "no response" : `HTTP ${failure.status}`;
    const attempts = `${failure.attempts} attempt${failure.attempts === 1 ? "" : "s"}`;
    return new LeaseStoreError(
      `S3 PutObject of ${this.where(name)} failed (${status}, ${attempts}): ${failure.message}; ${outcome}`,
      { ambiguous, cause },
    );
  }

  /** Runs one read-only request, wrapping its failure (reads change nothing, so never ambiguous). */
  private async readCall<T>(what: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      throw new LeaseStoreError(`S3 ${what} failed: ${describeFailure(error).message}`, {
        ambiguous: false,
        cause: error,
      });
    }
  }

  private where(name: string): string {
    return `s3://${this.bucket}/${objectKey(this.prefix, name)}`;
  }
}

function checkOptions(options: S3StoreOptions): FieldIssue[] {
  if (typeof options !== "object" || options === null) {
    return [{ path: "", message: "expected an object with at least a bucket" }];
  }
  const issues: FieldIssue[] = [];
  if (typeof options.bucket !== "string" || !BUCKET_PATTERN.test(options.bucket)) {
    issues.push({
      path: "bucket",
      message: `expected an S3 bucket name (3-63 characters of a-z 0-9 . - starting and ending with a letter or digit), got ${JSON.stringify(options.bucket)}`,
    });
  }
  if (
    options.prefix !== undefined &&
    (typeof options.prefix !== "string" || !OBJECT_PREFIX_PATTERN.test(options.prefix))
  ) {
    issues.push({ path: "prefix", message: "expected at most 512 printable ASCII characters without spaces" });
  }
  if (options.client !== undefined && typeof (options.client as { send?: unknown })?.send !== "function") {
    issues.push({ path: "client", message: "expected an S3Client from @aws-sdk/client-s3" });
  }
  if (options.client !== undefined) {
    for (const field of ["region", "endpoint", "forcePathStyle", "credentials", "timeoutMs"] as const) {
      if (options[field] !== undefined) {
        issues.push({
          path: field,
          message: "only applies to the client the store creates; configure your own client instead",
        });
      }
    }
  }
  if (options.timeoutMs !== undefined && !(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
    issues.push({ path: "timeoutMs", message: `expected a positive number of milliseconds, got ${options.timeoutMs}` });
  }
  return issues;
}

/** The SDK has no error classes for 412/409: status and name come from `$metadata` and `name`. */
function describeFailure(error: unknown): SdkFailure {
  const e = error as {
    name?: unknown;
    code?: unknown;
    message?: unknown;
    $metadata?: { httpStatusCode?: number; attempts?: number };
  } | null;
  const name = typeof e?.name === "string" ? e.name : "Error";
  const status = e?.$metadata?.httpStatusCode;
  const attempts = e?.$metadata?.attempts ?? 1;
  const code = typeof e?.code === "string" ? e.code.toUpperCase() : "";
  const text = typeof e?.message === "string" ? e.message : String(error);
  const message = typeof status === "number" ? `${name}: ${text} (HTTP ${status})` : `${name}: ${text}`;
  // An abort or timeout may strike after sending, whatever the SDK attached.
  const unsent = e?.$metadata === undefined && !["AbortError", "TimeoutError"].includes(name);
  return { name, status: typeof status === "number" ? status : undefined, attempts, code, unsent, message };
}
