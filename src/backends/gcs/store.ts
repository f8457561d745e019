/**
 * Google Cloud Storage store (`leasehold/stores/gcs`), on @google-cloud/storage: an adapter over
 * the object-store core (../object-store/store.ts, which states the contract). The object's `generation`
 * is the revision: a create is an upload with `ifGenerationMatch=0`, a replace an upload with
 * `ifGenerationMatch=<generation>`; GCS applies either atomically or answers 412. Uploads are
 * simple (one request, all or nothing), with `Cache-Control: no-store` so no cache ever serves a
 * stale lease.
 *
 * Retries: a conditional upload that applied but whose response was lost comes back as 412 when
 * the SDK retries it. The `Storage` this store creates never retries, so timeouts, 408, 429 and
 * 5xx surface as an ambiguous `LeaseStoreError` for the elector to resolve. A caller's own
 * `Storage` may retry, so after every 412 the store reads the object and reports the conflict
 * with it: the one write path (src/elector/cas.ts) sees its own `writeId` there and counts the
 * write as applied, never as a lost lease.
 *
 * Limits: GCS sustains about one write per second to one object (`limits.minWriteIntervalMs`,
 * declared in src/backends/gcs/backend.ts): an elector renewing faster is refused by its option
 * validation. Node only (the SDK hangs inside workerd).
 */
import type { Bucket, File, GetFilesOptions, StorageOptions } from "@google-cloud/storage";
import { LeaseStoreError, LeaseValidationError } from "../../errors.js";
import { type Revision, validate } from "../../lease.js";
import { importPeer } from "../../peer.js";
import { DEFAULT_OBJECT_TIMEOUT_MS } from "../object-store/fields.js";
import type { ObjectFailure, ObjectService, ObjectVersion } from "../object-store/store.js";
import { OBJECT_PAGE_SIZE, ObjectStore } from "../object-store/store.js";
import { GCS_LIMITS, type GcsStoreOptions, gcsOptionsSchema } from "./backend.js";

export type { GcsStoreOptions } from "./backend.js";

const { Storage: StorageClass } = await importPeer(
  "@google-cloud/storage",
  "@google-cloud/storage@7",
  () => import("@google-cloud/storage"),
);

const GENERATION_PATTERN = /^[1-9][0-9]{0,19}$/;

class GcsService implements ObjectService {
  readonly service = "GCS";
  readonly words = { read: "read", write: "upload", object: "object", revision: "a generation" };

  constructor(
    readonly bucket: Bucket,
    /** True only for the client this store created: then nothing is ever sent twice. */
    private readonly sendsOnce: boolean,
    private readonly timeoutMs: number,
  ) {}

  where(key: string): string {
    return `gs://${this.bucket.name}/${key}`;
  }

  parseRevision(revision: Revision): string {
    return parseGeneration(revision);
  }

  /**
   * One GET for body and generation (from `x-goog-generation`, so both belong to one version).
   * Without that header: metadata first, then the body of exactly that generation.
   */
  async read(key: string, signal?: AbortSignal): Promise<ObjectVersion | null> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const media = await this.download(this.bucket.file(key), signal);
      if (media === null) return null;
      if (media.generation !== undefined) return { body: media.body, revision: media.generation };
      let generation: string;
      try {
        const [metadata] = await this.bucket.file(key).getMetadata();
        if (metadata.generation === undefined) break;
        generation = String(metadata.generation);
      } catch (error) {
        if (httpStatus(error) === 404) return null;
        throw error;
      }
      const pinned = await this.download(this.bucket.file(key, { generation }), signal);
      // 404 here: that generation was replaced meanwhile; read again.
      if (pinned !== null) return { body: pinned.body, revision: generation };
    }
    throw new Error("could not learn the object's generation");
  }

  async write(key: string, body: string, expected: string | null, signal?: AbortSignal): Promise<string | undefined> {
    // A fresh File per call: save() stores the response metadata on the File object.
    const file = this.bucket.file(key);
    await untilAborted(
      file.save(body, {
        resumable: false,
        // Off on purpose: on a checksum mismatch the SDK deletes the object unconditionally,
        // which could delete a newer holder's record. TLS protects the bytes; reads validate.
        validation: false,
        timeout: this.timeoutMs,
        preconditionOpts: { ifGenerationMatch: expected ?? "0" },
        metadata: { contentType: "application/json", cacheControl: "no-store" },
      }),
      signal,
    );
    const generation = file.metadata.generation;
    return generation === undefined || generation === null ? undefined : String(generation);
  }

  async *keys(keyPrefix: string, startOffset: string | undefined): AsyncIterable<string> {
    let query: GetFilesOptions | null = {
      prefix: keyPrefix,
      autoPaginate: false,
      maxResults: OBJECT_PAGE_SIZE,
      ...(startOffset !== undefined ? { startOffset } : {}),
    };
    while (query !== null) {
      const page: GetFilesOptions = query;
      const [files, nextQuery] = await this.bucket.getFiles(page);
      for (const file of files) yield file.name;
      query = (nextQuery as GetFilesOptions | null | undefined) ?? null;
    }
  }

  describe(error: unknown): ObjectFailure {
    const message = error instanceof Error ? error.message : String(error);
    const status = httpStatus(error);
    const code = (error as { code?: unknown } | null)?.code;
    return {
      status,
      code: typeof code === "string" ? code.toUpperCase() : "",
      message: status === undefined ? message : `${message} (HTTP ${status})`,
      // A client of the caller's may retry: an earlier attempt may have applied before the answer.
      retried: !this.sendsOnce,
    };
  }

  refusal(failure: ObjectFailure): "conflict" | undefined {
    return failure.status === 412 ? "conflict" : undefined;
  }

  private download(file: File, signal?: AbortSignal): Promise<{ body: string; generation: string | undefined } | null> {
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
        else reject(error);
      });
    });
  }
}

export class GcsStore extends ObjectStore {
  /** GCS allows about one write per second to one object: the elector's option validation reads this. */
  readonly limits = GCS_LIMITS;
  readonly bucket: Bucket;

  constructor(options: GcsStoreOptions) {
    const o = validate("GCS store options", gcsOptionsSchema, options);
    let bucket: Bucket;
    let sendsOnce = false;
    if (typeof o.bucket !== "string") bucket = o.bucket;
    else if (o.storage) bucket = o.storage.bucket(o.bucket);
    else {
      // autoRetry false *and* maxRetries 0: save() consults both. A store never retries a CAS blindly.
      const config: StorageOptions = { retryOptions: { autoRetry: false, maxRetries: 0 } };
      if (o.apiEndpoint !== undefined) config.apiEndpoint = o.apiEndpoint;
      if (o.projectId !== undefined) config.projectId = o.projectId;
      bucket = new StorageClass(config).bucket(o.bucket);
      sendsOnce = true;
    }
    super(new GcsService(bucket, sendsOnce, o.timeoutMs ?? DEFAULT_OBJECT_TIMEOUT_MS), {
      prefix: o.prefix,
      readCurrentOnConflict: o.readCurrentOnConflict,
    });
    this.bucket = bucket;
  }
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
