/**
 * Amazon S3 store (`leasehold/stores/s3`), on @aws-sdk/client-s3 and S3's conditional writes:
 * an adapter over the object-store core (../object-store/store.ts, which states the contract). The
 * object's ETag is the revision: a create is one `PutObject` with `If-None-Match: *`, a replace
 * one `PutObject` with `If-Match: <etag>`; S3 answers 412 `PreconditionFailed` to a failed
 * condition, and 404 `NoSuchKey` to an If-Match on an object that is gone (a conflict whose
 * current record is `null`).
 *
 * A new endpoint is checked first (../object-store/conditional-probe.ts): once per process and bucket prefix,
 * before any lease is written, the store makes sure the server refuses a second
 * `If-None-Match: *` and a stale `If-Match`. A server that accepts either, or answers `501 Not
 * Implemented` to a conditional write, is refused with a `StoreContractError` naming the endpoint
 * and what failed (S3-compatible servers that ignore the conditions exist: docs/s3.md).
 *
 * Retries: a conditional PUT that applied but whose answer was lost comes back as 412 when the SDK
 * sends it again. The `S3Client` this store creates therefore makes exactly one attempt
 * (`maxAttempts: 1`). A caller's own client may retry; the store sees how many attempts the SDK
 * made (`$metadata.attempts`), and after more than one an error is always ambiguous.
 *
 * Errors: S3's 409 `ConditionalRequestConflict` (another conditional write to the object was in
 * progress) on a first attempt proves this write did not apply: a plain, non-ambiguous error the
 * elector retries like any other. A 403 on a read of a missing key means the role may not list the
 * bucket (AWS then hides "no such key"): the message says to grant `s3:ListBucket`.
 *
 * `list(prefix)`: `ListObjectsV2` under the prefix (general purpose buckets list in key order),
 * then one GET per lease. Permissions: `s3:GetObject`, `s3:PutObject` on `<bucket>/<prefix>*` and
 * `s3:ListBucket` on the bucket; see docs/s3.md. Node only: in workerd the SDK cannot parse S3's XML
 * answers (no DOMParser), test/workers/s3.test.ts.
 */
import type { S3Client } from "@aws-sdk/client-s3";
import { validate } from "../../lease.js";
import { importPeer } from "../../peer.js";
import { probeConditionalWrites } from "../object-store/conditional-probe.js";
import { ETAG_PATTERN, parseEtag } from "../object-store/etag.js";
import { DEFAULT_OBJECT_TIMEOUT_MS } from "../object-store/fields.js";
import type { ObjectFailure, ObjectService, ObjectVersion } from "../object-store/store.js";
import { OBJECT_PAGE_SIZE, ObjectStore } from "../object-store/store.js";
import { type S3StoreOptions, s3OptionsSchema } from "./backend.js";

export type { S3StoreOptions } from "./backend.js";

const {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client: S3ClientClass,
} = await importPeer("@aws-sdk/client-s3", "@aws-sdk/client-s3@3", () => import("@aws-sdk/client-s3"));

const THROTTLING = new Set(["SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded"]);

class S3Service implements ObjectService {
  readonly service = "S3";
  readonly words = { read: "GetObject", write: "PutObject", object: "object", revision: "an ETag" };

  constructor(
    readonly client: S3Client,
    readonly bucket: string,
    private readonly ownsClient: boolean,
  ) {}

  where(key: string): string {
    return `s3://${this.bucket}/${key}`;
  }

  parseRevision(revision: string): string {
    return parseEtag(revision, "S3");
  }

  async read(key: string, signal?: AbortSignal): Promise<ObjectVersion | null> {
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key }),
        signal ? { abortSignal: signal } : {},
      );
      const body = (await out.Body?.transformToString("utf-8")) ?? "";
      if (out.ETag === undefined || !ETAG_PATTERN.test(out.ETag)) throw new Error("answered without an ETag");
      return { body, revision: out.ETag };
    } catch (error) {
      const failure = this.describe(error);
      if (failure.status === 404 && failure.code === "NoSuchKey") return null;
      throw error;
    }
  }

  async write(key: string, body: string, expected: string | null, signal?: AbortSignal): Promise<string | undefined> {
    const out = await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: body,
        ContentType: "application/json",
        CacheControl: "no-store",
        ...(expected === null ? { IfNoneMatch: "*" } : { IfMatch: expected }),
      }),
      signal ? { abortSignal: signal } : {},
    );
    return out.ETag !== undefined && ETAG_PATTERN.test(out.ETag) ? out.ETag : undefined;
  }

  async *keys(keyPrefix: string, startAfter: string | undefined): AsyncIterable<string> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: keyPrefix,
          MaxKeys: OBJECT_PAGE_SIZE,
          ...(token === undefined && startAfter !== undefined ? { StartAfter: startAfter } : {}),
          ...(token === undefined ? {} : { ContinuationToken: token }),
        }),
      );
      for (const object of page.Contents ?? []) if (object.Key !== undefined) yield object.Key;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /** The SDK has no error classes for 412/409: status and name come from `$metadata` and `name`. */
  describe(error: unknown): ObjectFailure {
    const e = error as {
      name?: unknown;
      code?: unknown;
      message?: unknown;
      $metadata?: { httpStatusCode?: number; attempts?: number };
    } | null;
    const name = typeof e?.name === "string" ? e.name : "Error";
    const status = typeof e?.$metadata?.httpStatusCode === "number" ? e.$metadata.httpStatusCode : undefined;
    const attempts = e?.$metadata?.attempts ?? 1;
    const text = typeof e?.message === "string" ? e.message : String(error);
    const answer = status === undefined ? "no response" : `HTTP ${status}`;
    return {
      status,
      // With an answer, S3's error name; without one, the connection's error code (ECONNREFUSED).
      code: status !== undefined ? name : typeof e?.code === "string" ? e.code.toUpperCase() : "",
      message: `${name}: ${text} (${answer}, ${attempts} attempt${attempts === 1 ? "" : "s"})`,
      retried: attempts > 1,
      // No $metadata: the SDK failed before its retry loop (no region, no credentials), except an
      // abort or timeout, which may strike after sending.
      unsent: e?.$metadata === undefined && !["AbortError", "TimeoutError"].includes(name),
      throttled: THROTTLING.has(name),
    };
  }

  refusal(failure: ObjectFailure, expected: string | null): "conflict" | "absent" | undefined {
    if (failure.status === 412) return "conflict";
    // If-Match on an object that no longer exists: nothing to replace, and nothing was written.
    if (failure.status === 404 && failure.code === "NoSuchKey" && expected !== null) return "absent";
    return undefined;
  }

  notApplied(failure: ObjectFailure): string | undefined {
    return failure.status === 409 && failure.code === "ConditionalRequestConflict"
      ? "another conditional write to this object was in progress; this one did not apply (retry)"
      : undefined;
  }

  readAdvice(failure: ObjectFailure): string | undefined {
    return failure.status === 403
      ? "S3 answers 403 instead of 404 for a key that does not exist when the caller may not list the bucket: grant s3:ListBucket on the bucket (docs/s3.md has the policy)"
      : undefined;
  }

  async close(): Promise<void> {
    if (this.ownsClient) this.client.destroy();
  }
}

export class S3Store extends ObjectStore {
  readonly bucket: string;
  /** The server as named in messages: the endpoint given, or AWS S3 itself. */
  readonly endpoint: string;
  private readonly s3: S3Service;

  constructor(options: S3StoreOptions) {
    const o = validate("S3 store options", s3OptionsSchema, options);
    let client = o.client;
    if (client === undefined) {
      const timeout = o.timeoutMs ?? DEFAULT_OBJECT_TIMEOUT_MS;
      client = new S3ClientClass({
        // One attempt: a retried conditional PUT whose first attempt applied would fail its own
        // condition, turning a success into an apparent conflict. The elector retries instead.
        maxAttempts: 1,
        // throwOnRequestTimeout: without it the Node handler only logs a warning when the time is up.
        requestHandler: { requestTimeout: timeout, connectionTimeout: timeout, throwOnRequestTimeout: true },
        ...(o.region === undefined ? {} : { region: o.region }),
        ...(o.endpoint === undefined ? {} : { endpoint: o.endpoint }),
        ...(o.forcePathStyle === undefined ? {} : { forcePathStyle: o.forcePathStyle }),
        ...(o.credentials === undefined ? {} : { credentials: o.credentials }),
      });
    }
    const service = new S3Service(client, o.bucket, o.client === undefined);
    super(service, { prefix: o.prefix });
    this.s3 = service;
    this.bucket = o.bucket;
    this.endpoint = o.endpoint ?? (o.client === undefined ? "AWS S3" : "the S3 client's endpoint");
  }

  /** Before the first write: the server must refuse what S3 refuses (../object-store/conditional-probe.ts). */
  protected override beforeWrite(): Promise<void> {
    return probeConditionalWrites(this.s3, this.prefix, `${this.endpoint} (bucket ${this.bucket})`);
  }
}
