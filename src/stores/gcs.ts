/**
 * Google Cloud Storage store (`leasehold/stores/gcs`), on @google-cloud/storage.
 *
 * Contract: one object per lease, `<prefix><name>.json`, holding the record as JSON. The object's
 * `generation` is the revision: a create is an upload with `ifGenerationMatch=0`, a replace an
 * upload with `ifGenerationMatch=<generation>`; GCS applies either atomically or answers 412,
 * which becomes a `LeaseConflictError`. Uploads are simple (one request, all or nothing), with
 * `Cache-Control: no-store` so no cache ever serves a stale lease.
 *
 * Retries: a conditional upload that applied but whose response was lost comes back as 412 when
 * the SDK retries it. The `Storage` this store creates never retries, so timeouts, 408, 429 and
 * 5xx surface as an ambiguous `LeaseStoreError` for the elector to resolve. A caller's own
 * `Storage` may retry, so after every 412 the store reads the object and reports the conflict
 * with it: the one write path (src/elector/cas.ts) sees its own `writeId` there and counts the
 * write as applied, never as a lost lease.
 *
 * Limits: GCS sustains about one write per second to one object; `checkGcsElectorSettings`
 * rejects elector settings that renew faster. Node only (the SDK hangs inside workerd).
 */
import type { Bucket, File, GetFilesOptions, Storage, StorageOptions } from "@google-cloud/storage";
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
import { listInNameOrder, listStartKey, OBJECT_PREFIX_PATTERN, objectKey } from "./object-keys.js";
import { readWithOneRetryOnReset, writeRefused } from "./request-outcome.js";

const { Storage: StorageClass } = await importPeer(
  "@google-cloud/storage",
  "@google-cloud/storage@7",
  () => import("@google-cloud/storage"),
);

export interface GcsStoreOptions {
  /** Bucket name, or a `Bucket` of your own `Storage` (then `storage`, `apiEndpoint`, `projectId` are unused). */
  bucket: string | Bucket;
  /** Your own client (credentials, retries); default: a new `Storage` with SDK retries off. */
  storage?: Storage;
  /** Object name prefix for every lease; default "leases/". Objects are `<prefix><name>.json`. */
  prefix?: string;
  /** API endpoint for the client this store creates, e.g. an emulator's "http://127.0.0.1:4443". */
  apiEndpoint?: string;
  /** Project for the client this store creates (default: from the environment). */
  projectId?: string;
  /** On a conflict, read the object so the error carries the current record; default true. */
  readCurrentOnConflict?: boolean;
  /** Per-request timeout in ms (an upload that times out is ambiguous); default 10000. */
  timeoutMs?: number;
}

/** GCS sustains about one write per second to one object name; faster writes get 429. */
export const GCS_MIN_WRITE_INTERVAL_MS = 1000;

const DEFAULT_PREFIX = "leases/";
const PAGE_SIZE = 200;
const BUCKET_PATTERN = /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/;
const GENERATION_PATTERN = /^[1-9][0-9]{0,19}$/;

/**
 * Rejects elector settings that would write one lease object more often than GCS allows. The leader
 * writes once per `renewMs`; followers write only to take over an expired or released lease (rare),
 * so `renewMs` is the setting that matters. `leaseMs` and `retryMs` are accepted for the caller's
 * convenience: a leader retrying a failed renewal sooner than 1 s may meet a 429, which is
 * ambiguous and resolved by the elector's read, not a lost lease.
 */
export function checkGcsElectorSettings(settings: { leaseMs: number; renewMs: number; retryMs: number }): void {
  const issues: FieldIssue[] = [];
  if (!(settings.renewMs >= GCS_MIN_WRITE_INTERVAL_MS)) {
    issues.push({
      path: "renewMs",
      message: `expected at least ${GCS_MIN_WRITE_INTERVAL_MS} ms, got ${settings.renewMs}: GCS allows about one write per second to one object, and every renewal is a write (use leaseMs >= ${3 * GCS_MIN_WRITE_INTERVAL_MS} with renewMs = leaseMs / 3)`,
    });
  }
  if (issues.length > 0) throw new LeaseValidationError("elector options for the GCS store", issues);
}

export class GcsStore implements LeaseStore {
  /** For a generic check in the elector or `openStore`: see `checkGcsElectorSettings`. */
  static readonly minWriteIntervalMs = GCS_MIN_WRITE_INTERVAL_MS;
  static readonly checkElectorSettings = checkGcsElectorSettings;

  /** The elector calls this with its resolved settings (LeaseStore.checkElectorSettings). */
  checkElectorSettings(settings: { leaseMs: number; renewMs: number; retryMs: number }): void {
    checkGcsElectorSettings(settings);
  }

  readonly bucket: Bucket;
  readonly prefix: string;
  private readonly readCurrentOnConflict: boolean;
  private readonly timeoutMs: number;
  /** True only for the client this store created: then a 412 is always a genuine conflict. */
  private readonly writesNeverRetry: boolean;

  constructor(options: GcsStoreOptions) {
    const issues = checkOptions(options);
    if (issues.length > 0) throw new LeaseValidationError("GCS store options", issues);
    this.prefix = options.prefix ?? DEFAULT_PREFIX;
    this.readCurrentOnConflict = options.readCurrentOnConflict ?? true;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    if (typeof options.bucket !== "string") {
      this.bucket = options.bucket;
      this.writesNeverRetry = false;
    } else if (options.storage) {
      this.bucket = options.storage.bucket(options.bucket);
      this.writesNeverRetry = false;
    } else {
      // autoRetry false *and* maxRetries 0: save() consults both. A store never retries a CAS blindly.
      const config: StorageOptions = { retryOptions: { autoRetry: false, maxRetries: 0 } };
      if (options.apiEndpoint !== undefined) config.apiEndpoint = options.apiEndpoint;
      if (options.projectId !== undefined) config.projectId = options.projectId;
      this.bucket = new StorageClass(config).bucket(options.bucket);
      this.writesNeverRetry = true;
    }
  }

  async get(name: string, options?: CallOptions): Promise<Stored | null> {
    validateName(name);
    return this.read(name, options?.signal);
  }

  async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const record = validateRecord(next);
    const ifGenerationMatch = expected === null ? "0" : parseGeneration(expected);
    if (options?.signal?.aborted) {
      throw new LeaseStoreError(`GCS upload of ${this.where(record.name)} aborted before it was sent`, {
        ambiguous: false,
        cause: options.signal.reason,
      });
    }
    // A fresh File per call: save() stores the response metadata on the File object.
    const file = this.file(record.name);
    try {
      await untilAborted(
        file.save(JSON.stringify(record), {
          resumable: false,
          // Off on purpose: on a checksum mismatch the SDK deletes the object unconditionally,
          // which could delete a newer holder's record. TLS protects the bytes; reads validate.
          validation: false,
          timeout: this.timeoutMs,
          preconditionOpts: { ifGenerationMatch },
          metadata: { contentType: "application/json", cacheControl: "no-store" },
        }),
        options?.signal,
      );
    } catch (error) {
      if (httpStatus(error) === 412) return this.resolvePreconditionFailed(record, error, options?.signal);
      throw this.writeError(record.name, error);
    }
    const generation = file.metadata.generation;
    if (generation === undefined || generation === null) {
      throw new LeaseStoreError(`GCS upload of ${this.where(record.name)} answered without a generation`, {
        ambiguous: true,
      });
    }
    return { record, revision: String(generation) };
  }

  checkRevision(revision: Revision): void {
    parseGeneration(revision);
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<Stored> {
    validatePrefix(prefix);
    const start = listStartKey(this.prefix, prefix, options.startAfter);
    yield* listInNameOrder(this.keys(this.prefix + prefix, start), this.prefix, prefix, options, (name) =>
      this.read(name),
    );
  }

  /** Object names under `keyPrefix` in key order, from `startOffset` on, one page at a time. */
  private async *keys(keyPrefix: string, startOffset: string | undefined): AsyncIterable<string> {
    let query: GetFilesOptions | null = {
      prefix: keyPrefix,
      autoPaginate: false,
      maxResults: PAGE_SIZE,
      ...(startOffset !== undefined ? { startOffset } : {}),
    };
    while (query !== null) {
      const page: GetFilesOptions = query;
      const [files, nextQuery] = await this.call(`GCS list of gs://${this.bucket.name}/${keyPrefix}*`, () =>
        this.bucket.getFiles(page),
      );
      for (const file of files) yield file.name;
      query = (nextQuery as GetFilesOptions | null | undefined) ?? null;
    }
  }

  /**
   * One GET for body and generation (from `x-goog-generation`, so both belong to one version).
   * Without that header: metadata first, then the body of exactly that generation.
   */
  private async read(name: string, signal?: AbortSignal): Promise<Stored | null> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const media = await this.download(this.file(name), name, signal);
      if (media === null) return null;
      if (media.generation !== undefined) return { record: parseRecord(name, media.body), revision: media.generation };
      let generation: string;
      try {
        const [metadata] = await this.file(name).getMetadata();
        if (metadata.generation === undefined) break;
        generation = String(metadata.generation);
      } catch (error) {
        if (httpStatus(error) === 404) return null;
        throw this.readError(name, error);
      }
      const pinned = await this.download(this.file(name, generation), name, signal);
      // 404 here: that generation was replaced meanwhile; read again.
      if (pinned !== null) return { record: parseRecord(name, pinned.body), revision: generation };
    }
    throw new LeaseStoreError(`GCS read of ${this.where(name)}: could not learn the object's generation`, {
      ambiguous: false,
    });
  }

  /** One download, sent once more after a reset connection (./request-outcome.ts); reads change nothing. */
  private async download(
    file: File,
    name: string,
    signal?: AbortSignal,
  ): Promise<{ body: string; generation: string | undefined } | null> {
    return readWithOneRetryOnReset(() => this.downloadOnce(file, name, signal), signal);
  }

  private downloadOnce(
    file: File,
    name: string,
    signal?: AbortSignal,
  ): Promise<{ body: string; generation: string | undefined } | null> {
    return new Promise((resolve, reject) => {
      signal?.throwIfAborted();
      const stream = file.createReadStream();
      const chunks: Buffer[] = [];
      let generation: string | undefined;
      const timer = setTimeout(
        () => stream.destroy(new Error(`no answer within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      const onAbort = () => stream.destroy(signal?.reason ?? new Error("aborted"));
      signal?.addEventListener("abort", onAbort, { once: true });
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      stream.on("response", (response: { headers?: Record<string, unknown> }) => {
        const header = response.headers?.["x-goog-generation"];
        if (typeof header === "string" && GENERATION_PATTERN.test(header)) generation = header;
      });
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        done();
        resolve({ body: Buffer.concat(chunks).toString("utf8"), generation });
      });
      stream.on("error", (error) => {
        done();
        if (httpStatus(error) === 404) resolve(null);
        else reject(this.readError(name, error));
      });
    });
  }

  /**
   * A 412 means: someone else's write is current, or (with a retrying client) our own write
   * applied on an earlier attempt. It is reported with the current record; the one write path
   * (src/elector/cas.ts) tells the two apart by its `writeId`.
   */
  private async resolvePreconditionFailed(record: LeaseRecord, cause: unknown, signal?: AbortSignal): Promise<never> {
    if (this.writesNeverRetry && !this.readCurrentOnConflict) {
      throw new LeaseConflictError(record.name, undefined, { cause });
    }
    let current: Stored | null;
    try {
      current = await this.read(record.name, signal);
    } catch (readError) {
      // A foreign or broken object is reported as such: it is never overwritten.
      if (readError instanceof LeaseCorruptError) throw readError;
      // Our own client never retries: the 412 was a genuine conflict, only its current is unknown.
      if (this.writesNeverRetry) throw new LeaseConflictError(record.name, undefined, { cause });
      throw new LeaseStoreError(
        `GCS upload of ${this.where(record.name)} failed its precondition after possible SDK retries, and reading it back failed: outcome unknown`,
        { ambiguous: true, cause: readError },
      );
    }
    throw new LeaseConflictError(record.name, current, { cause });
  }

  private writeError(name: string, error: unknown): LeaseStoreError {
    if (error instanceof LeaseStoreError) return error;
    // Conservative: only a definite rejection is unambiguous, and with a client that may retry,
    // an earlier attempt may have applied before the final answer.
    const rejected = writeRefused(httpStatus(error), errorCode(error));
    return new LeaseStoreError(`GCS upload of ${this.where(name)} failed: ${describe(error)}`, {
      ambiguous: !(rejected && this.writesNeverRetry),
      cause: error,
    });
  }

  private readError(name: string, error: unknown): LeaseStoreError {
    return new LeaseStoreError(`GCS read of ${this.where(name)} failed: ${describe(error)}`, {
      ambiguous: false,
      cause: error,
    });
  }

  /** Wraps a non-write SDK call's failure (reads change nothing, so never ambiguous). */
  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw new LeaseStoreError(`${what} failed: ${describe(error)}`, {
        ambiguous: false,
        cause: error,
      });
    }
  }

  private file(name: string, generation?: string): File {
    const key = objectKey(this.prefix, name);
    return generation === undefined ? this.bucket.file(key) : this.bucket.file(key, { generation });
  }

  private where(name: string): string {
    return `gs://${this.bucket.name}/${objectKey(this.prefix, name)}`;
  }
}

function checkOptions(options: GcsStoreOptions): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (typeof options !== "object" || options === null) {
    return [{ path: "", message: "expected an object with at least a bucket" }];
  }
  const { bucket } = options;
  if (typeof bucket === "string") {
    if (!BUCKET_PATTERN.test(bucket)) {
      issues.push({
        path: "bucket",
        message: `expected a GCS bucket name (3-222 characters of a-z 0-9 . _ -), got ${JSON.stringify(bucket)}`,
      });
    }
  } else if (typeof bucket !== "object" || bucket === null || typeof (bucket as Bucket).file !== "function") {
    issues.push({ path: "bucket", message: "expected a bucket name or a Bucket from @google-cloud/storage" });
  }
  if (
    options.prefix !== undefined &&
    (typeof options.prefix !== "string" || !OBJECT_PREFIX_PATTERN.test(options.prefix))
  ) {
    issues.push({ path: "prefix", message: "expected at most 512 printable ASCII characters without spaces" });
  }
  if (options.storage !== undefined && typeof (options.storage as Storage)?.bucket !== "function") {
    issues.push({ path: "storage", message: "expected a Storage from @google-cloud/storage" });
  }
  if (options.timeoutMs !== undefined && !(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
    issues.push({ path: "timeoutMs", message: `expected a positive number of milliseconds, got ${options.timeoutMs}` });
  }
  return issues;
}

/** GCS generations are positive 64-bit integers; anything else did not come from this store. */
function parseGeneration(revision: Revision): string {
  if (typeof revision === "string" && GENERATION_PATTERN.test(revision)) return revision;
  throw new LeaseValidationError("revision", [
    {
      path: "expected",
      message: `expected a GCS object generation this store issued (a positive integer), got ${JSON.stringify(revision)}`,
    },
  ]);
}

/** The SDK cannot cancel an upload: on abort the caller stops waiting and the outcome is unknown. */
function untilAborted<T>(pending: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return pending;
  pending.catch(() => {});
  return new Promise<T>((resolve, reject) => {
    const onAbort = () =>
      reject(new LeaseStoreError("GCS upload abandoned (aborted): it may still apply", { ambiguous: true }));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    pending.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function httpStatus(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "number" && code >= 100 && code < 600) return code;
  if (typeof code === "string" && /^[1-5][0-9]{2}$/.test(code)) return Number(code);
  return undefined;
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code.toUpperCase() : "";
}

function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const status = httpStatus(error);
  return status === undefined ? message : `${message} (HTTP ${status})`;
}
