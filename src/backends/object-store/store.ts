/**
 * The one object-store core under the S3, GCS and Azure Blob stores: everything but the wire.
 *
 * Contract: one object per lease, `<prefix><name>.json` (./keys.ts), holding the record as
 * JSON, whose service revision (S3 and Azure ETag, GCS generation) is the lease's revision. A
 * create is one conditional PUT that must not find the object, a replace one that must find
 * exactly the revision expected; the service applies either atomically or refuses. A renewal is
 * that one PUT and no read: the new revision comes back with the answer. Every body is unique
 * (it carries the write's random `writeId`), which matters where a revision is a content hash:
 * writing A, then B, then A again would bring A's ETag back and a stale If-Match would succeed.
 * Revisions are not ordered: the fencing token is the record's `term`.
 *
 * What the core decides, once for all three (an adapter, `ObjectService`, only talks to its
 * service and describes its failures):
 * - Conflicts: a refusal carries no record, so the core reads the object (one GET) and the
 *   `LeaseConflictError` carries it. If that read fails, the conflict is certain only when the
 *   write was sent once; after a possible client retry an earlier attempt may have applied, so
 *   the outcome is unknown (ambiguous). A record that cannot be parsed is `LeaseCorruptError`,
 *   never overwritten. The store only reports: whether its own write applied is decided by the
 *   one write path (src/elector/cas.ts) by `writeId`.
 * - Write errors: ambiguous unless the service certainly refused (./request-outcome.ts) on a
 *   write sent once. `501 Not Implemented` to a conditional write is a `StoreContractError`: the
 *   server does not support conditional writes, and retrying cannot help.
 * - Reads change nothing, so their errors are never ambiguous; a read whose connection was reset
 *   is sent once more.
 * - Listing by prefix yields leases in name order although services list in key order.
 *
 * Runtime-neutral.
 */
import {
  isLeaseCorruptError,
  isLeaseStoreError,
  LeaseConflictError,
  LeaseStoreError,
  StoreContractError,
} from "../../errors.js";
import type { CallOptions, LeaseRecord, LeaseStore, Listed, ListOptions, Revision, Stored } from "../../lease.js";
import { parseRecord, validatePrefix, validateRecord, validateRecordName } from "../../lease.js";
import { storedAt } from "../../listing.js";
import { DEFAULT_OBJECT_PREFIX } from "./fields.js";
import { listInNameOrder, listStartKey, objectKey } from "./keys.js";
import { readWithOneRetryOnReset, writeRefused } from "./request-outcome.js";

export const OBJECT_PAGE_SIZE = 200;

/** A failed request, as its adapter describes it. */
export interface ObjectFailure {
  status: number | undefined;
  /** The service's error code (S3 `name`, Azure `x-ms-error-code`) or a Node error code (ECONNRESET). */
  code: string;
  /** One line for messages: "Name: text (HTTP 412)". */
  message: string;
  /** The client may have sent the request more than once: an earlier attempt may have applied. */
  retried: boolean;
  /** Certainly never sent (the SDK failed before sending: no region, no credentials). */
  unsent?: boolean;
  /** Throttled: the service may have applied the write before answering so. */
  throttled?: boolean;
}

/** One version of an object: its body and its revision, read together. */
export interface ObjectVersion {
  body: string;
  revision: string;
}

/** What an adapter does: the service's wire, nothing else. Its methods throw the SDK's own errors. */
export interface ObjectService {
  /** For messages: "S3", "GCS", "Azure". */
  readonly service: string;
  /** For messages: the read and write calls ("GetObject", "PutObject"), the object noun, the revision's name. */
  readonly words: { read: string; write: string; object: string; revision: string };
  /** The object's address for messages (never a credential). */
  where(key: string): string;
  /** The service token of a revision this store issued, or a `LeaseValidationError`. */
  parseRevision(revision: Revision): string;
  /** One read of body and revision together; `null` when there is no such object. */
  read(key: string, signal?: AbortSignal): Promise<ObjectVersion | null>;
  /** One conditional write (`expected` null: only if absent); resolves the new revision (undefined if the answer had none). */
  write(key: string, body: string, expected: string | null, signal?: AbortSignal): Promise<string | undefined>;
  /** Keys under `keyPrefix` in key order, starting at or before `startAfter`'s successor when given. */
  keys(keyPrefix: string, startAfter: string | undefined): AsyncIterable<string>;
  describe(error: unknown): ObjectFailure;
  /**
   * How a failed conditional write was refused: "conflict" (the condition failed: read the
   * current record), "absent" (an If-Match on an object that is gone: the current record is
   * null), or undefined (not a refusal of the condition).
   */
  refusal(failure: ObjectFailure, expected: string | null): "conflict" | "absent" | undefined;
  /** A failure that proves nothing was written although writeRefused says otherwise: the reason, for the message. */
  notApplied?(failure: ObjectFailure): string | undefined;
  /** A read failure's own explanation (S3: 403 for a missing key without s3:ListBucket). */
  readAdvice?(failure: ObjectFailure): string | undefined;
  close?(): Promise<void>;
}

export interface ObjectStoreSettings {
  prefix?: string | undefined;
  /** On a conflict, read the object so the error carries the current record; default true. */
  readCurrentOnConflict?: boolean | undefined;
}

export class ObjectStore implements LeaseStore {
  readonly prefix: string;
  private readonly readCurrentOnConflict: boolean;

  constructor(
    protected readonly service: ObjectService,
    settings: ObjectStoreSettings = {},
  ) {
    this.prefix = settings.prefix ?? DEFAULT_OBJECT_PREFIX;
    this.readCurrentOnConflict = settings.readCurrentOnConflict ?? true;
  }

  async get(name: string, options?: CallOptions): Promise<Stored | null> {
    validateRecordName(name);
    return this.read(name, options?.signal);
  }

  async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const record = validateRecord(next);
    const condition = expected === null ? null : this.service.parseRevision(expected);
    const signal = options?.signal;
    await this.beforeWrite();
    const { service } = this;
    const key = objectKey(this.prefix, record.name);
    const what = `${service.service} ${service.words.write} of ${service.where(key)}`;
    if (signal?.aborted) {
      throw new LeaseStoreError(`${what} aborted before it was sent`, { ambiguous: false, cause: signal.reason });
    }
    let revision: string | undefined;
    try {
      revision = await service.write(key, JSON.stringify(record), condition, signal);
    } catch (error) {
      if (isLeaseStoreError(error)) throw error;
      const failure = service.describe(error);
      const refusal = service.refusal(failure, condition);
      if (refusal === "absent") throw new LeaseConflictError(record.name, null, { cause: error });
      if (refusal === "conflict") return this.conflict(record.name, failure, error, signal);
      throw writeError(what, service, failure, error);
    }
    if (revision === undefined) {
      throw new LeaseStoreError(`${what} answered without ${service.words.revision}`, { ambiguous: true });
    }
    return { record, revision };
  }

  checkRevision(revision: Revision): void {
    this.service.parseRevision(revision);
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<Listed> {
    validatePrefix(prefix);
    const start = listStartKey(this.prefix, prefix, options.startAfter);
    const keys = this.wrapListing(this.prefix + prefix, start);
    yield* listInNameOrder(keys, this.prefix, prefix, options, (name) => this.read(name));
  }

  async close(): Promise<void> {
    await this.service.close?.();
  }

  /** Runs before every write: a store that checks its server first (S3) overrides it. */
  protected async beforeWrite(): Promise<void> {}

  /** One read: body and revision of the same version; sent once more after a reset connection. */
  protected read(name: string, signal?: AbortSignal): Promise<Stored | null> {
    return readWithOneRetryOnReset(async () => {
      const key = objectKey(this.prefix, name);
      const version = await this.readObject(key, signal);
      return version === null ? null : storedAt(version.revision, () => parseRecord(name, version.body));
    }, signal);
  }

  /** One read of any object under this store, its failure wrapped (never ambiguous). */
  protected async readObject(key: string, signal?: AbortSignal): Promise<ObjectVersion | null> {
    const { service } = this;
    try {
      return await service.read(key, signal);
    } catch (error) {
      const failure = service.describe(error);
      const advice = service.readAdvice?.(failure);
      throw new LeaseStoreError(
        `${service.service} ${service.words.read} of ${service.where(key)} failed: ${failure.message}${advice ? `: ${advice}` : ""}`,
        { ambiguous: false, cause: error },
      );
    }
  }

  /** The service's listing, its failures wrapped (never ambiguous). */
  private async *wrapListing(keyPrefix: string, start: string | undefined): AsyncIterable<string> {
    try {
      yield* this.service.keys(keyPrefix, start);
    } catch (error) {
      const { service } = this;
      throw new LeaseStoreError(
        `${service.service} listing of ${service.where(keyPrefix)}* failed: ${service.describe(error).message}`,
        { ambiguous: false, cause: error },
      );
    }
  }

  /**
   * A refused condition. The answer carries no record, so read it. When that read fails, the
   * conflict is certain only if the write was sent once; after a possible retry an earlier
   * attempt may have applied, so the outcome is unknown.
   */
  private async conflict(name: string, failure: ObjectFailure, cause: unknown, signal?: AbortSignal): Promise<never> {
    if (!failure.retried && !this.readCurrentOnConflict) throw new LeaseConflictError(name, undefined, { cause });
    let current: Stored | null;
    try {
      current = await this.read(name, signal);
    } catch (readError) {
      if (isLeaseCorruptError(readError)) throw readError; // never overwritten
      if (failure.retried) {
        const { service } = this;
        throw new LeaseStoreError(
          `${service.service} ${service.words.write} of ${service.where(objectKey(this.prefix, name))} was refused its condition after a possible retry, and reading the ${service.words.object} back failed: an earlier attempt may have applied`,
          { ambiguous: true, cause: readError },
        );
      }
      throw new LeaseConflictError(name, undefined, { cause });
    }
    throw new LeaseConflictError(name, current, { cause });
  }
}

/** A write that failed other than by its condition: certain, ambiguous, or a server that cannot do CAS. */
function writeError(what: string, service: ObjectService, failure: ObjectFailure, cause: unknown): LeaseStoreError {
  if (failure.status === 501) {
    return new StoreContractError(
      `${what} failed: ${failure.message}: this server does not support conditional writes, which leasehold needs for every write; use a server that does (docs/s3.md lists the ones checked)`,
      { cause },
    );
  }
  const notApplied = failure.retried ? undefined : service.notApplied?.(failure);
  const rejected = notApplied !== undefined || writeRefused(failure.status, failure.code) || failure.unsent === true;
  const ambiguous = failure.retried || failure.throttled === true || !rejected;
  const outcome = ambiguous ? "the write may or may not have applied" : (notApplied ?? "nothing was written");
  return new LeaseStoreError(`${what} failed: ${failure.message}; ${outcome}`, { ambiguous, cause });
}
