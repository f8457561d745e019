/**
 * Fenced writes to an Azure block blob (`leasehold/fencing/azure-blob`), on @azure/storage-blob.
 * The blob keeps the term of its last writer in its metadata (default `leasehold_term`: Azure
 * metadata names are C# identifiers, so no hyphens), written in the same Put Blob as the data.
 * Azure cannot compare a metadata value on write, only the ETag, so a write is a read and a
 * compare-and-swap (the loop every object fence shares, ./object-fence.ts):
 *
 *   1. Get Blob Properties (Get Blob for a `data` function): the ETag and the stored term;
 *   2. stored term > mine: refuse (`StaleTermError`), nothing is sent;
 *   3. Put Blob with `If-Match: <that ETag>` (`If-None-Match: *` when the blob is absent);
 *   4. 412 `ConditionNotMet` or 409 `BlobAlreadyExists`: someone wrote in between; read again.
 *
 * Azure's ETags are opaque and change on every write, metadata included (measured on azurite, and
 * documented by Azure), so unlike S3 the same bytes written again get a new ETag: no ABA.
 *
 * Every Put Blob also stores a random write id (`leasehold_write_id`): a client that retries an
 * applied Put Blob whose answer was lost gets 412 or 409, and the id read back says it applied
 * (no second write). It takes your `BlockBlobClient`; the SDK is an optional peer, loaded on first
 * import (by the Azure Blob store's module, whose download reader it shares). Tested on Node, as
 * the store.
 */
import type { BlobDownloadResponseParsed, BlockBlobClient } from "@azure/storage-blob";
import { z } from "zod";
import { bodyBytes } from "../backends/azure-blob/store.js";
import { LeaseValidationError } from "../errors.js";
import {
  type Changed,
  changed,
  fencedUpload,
  type ObjectState,
  objectFenceSchema,
  signalField,
  signalOptions,
  type UploadFenceOptions,
  uploadFields,
} from "./object-fence.js";

export { FenceCorruptError, StaleTermError } from "./fence.js";

/** Metadata name holding the blob's fence unless you name another (`termKey`). */
export const DEFAULT_TERM_KEY = "leasehold_term";
/** Metadata name of the write id that recognises our own retried Put Blob. */
export const WRITE_ID_KEY = "leasehold_write_id";

/** `contentType` defaults to Azure's (application/octet-stream); `metadata` names are C# identifiers. */
export interface FencedWriteOptions extends UploadFenceOptions {
  /** Passed to every request. */
  abortSignal?: AbortSignal;
}

export interface FencedWriteResult {
  /** The ETag of the blob this write created. */
  etag: string;
  /** Rounds it took (1 unless another writer with a term <= mine wrote in between). */
  attempts: number;
}

/** A C# identifier, as Azure requires of metadata names (compared without case). */
const metadataName = z.string({ error: "expected a metadata name" }).regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, {
  error: "expected 1-63 characters of A-Z a-z 0-9 _, not starting with a digit",
});

const optionsSchema = objectFenceSchema({
  keyRule: metadataName,
  defaultTermKey: DEFAULT_TERM_KEY,
  extra: { ...uploadFields, ...signalField },
});

const utf8 = new TextEncoder();

/**
 * Uploads `options.data` to `blob` with the writer's term in its metadata, only if the blob's
 * stored term is absent or <= `options.term` (a read, then `If-Match` on the ETag read). Throws
 * `StaleTermError` (with the stored term) when a newer term has written the blob,
 * `FenceCorruptError` when its stored term is not a whole number, `LeaseValidationError` for bad
 * options (nothing is sent then), a `LeaseholdError` after `maxAttempts` rounds lost to writers
 * whose terms are not newer, and the SDK's own `RestError` for anything else (a timeout leaves the
 * outcome unknown; repeating the call with the same term is allowed by the fence).
 */
export async function fencedWrite(blob: BlockBlobClient, options: FencedWriteOptions): Promise<FencedWriteResult> {
  const keys = { writeIdKey: WRITE_ID_KEY, keyRule: metadataName };
  const { version, attempts } = await fencedUpload(optionsSchema, options, keys, (o) => {
    if (typeof (blob as { upload?: unknown } | null)?.upload !== "function") {
      throw new LeaseValidationError("fencedWrite", [
        { path: "blob", message: "expected a BlockBlobClient (container.getBlockBlobClient(name))" },
      ]);
    }
    return {
      resource: blob.url.split("?")[0] ?? blob.name, // without a SAS token: it is a credential
      async read(withContent): Promise<ObjectState | null> {
        try {
          if (!withContent) {
            const properties = await blob.getProperties(signalOptions(o.abortSignal));
            return { version: properties.etag ?? "", metadata: properties.metadata ?? {} };
          }
          const got: BlobDownloadResponseParsed = await blob.download(0, undefined, signalOptions(o.abortSignal));
          return { version: got.etag ?? "", metadata: got.metadata ?? {}, content: await bodyBytes(got) };
        } catch (error) {
          if (statusOf(error) === 404) return null;
          throw error;
        }
      },
      async write(body, metadata, etag): Promise<string | Changed> {
        const bytes = typeof body === "string" ? utf8.encode(body) : body;
        try {
          const out = await blob.upload(bytes, bytes.byteLength, {
            ...signalOptions(o.abortSignal),
            conditions: etag === null ? { ifNoneMatch: "*" } : { ifMatch: etag },
            metadata,
            ...(o.contentType === undefined ? {} : { blobHTTPHeaders: { blobContentType: o.contentType } }),
          });
          return out.etag ?? "";
        } catch (error) {
          // 412 ConditionNotMet: replaced (or deleted) since the read; 409 BlobAlreadyExists: created since.
          const status = statusOf(error);
          if (status === 412 || (status === 409 && codeOf(error) === "BlobAlreadyExists")) return changed(error);
          throw error;
        }
      },
    };
  });
  return { etag: version, attempts };
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === "number" ? status : undefined;
}

function codeOf(error: unknown): string | undefined {
  const e = error as { code?: unknown; details?: { errorCode?: unknown } } | null;
  const code = e?.details?.errorCode ?? e?.code;
  return typeof code === "string" ? code : undefined;
}
