/**
 * Fenced writes to a Google Cloud Storage object (`leasehold/fencing/gcs`). The object keeps the
 * term of its last writer in its custom metadata (default key `leasehold-term`), written in the
 * same upload as the data. GCS has no "compare this metadata" precondition, so a write is a read
 * and a compare-and-swap on the object's `generation` (the loop every object fence shares,
 * ./object-fence.ts): read the generation and the stored term, refuse a newer term
 * (`StaleTermError`, nothing sent), upload with `ifGenerationMatch=<that generation>` (0 when
 * absent), and on 412 read again.
 *
 * Every upload also stores a random write id (`leasehold-write-id`): a client that retries a lost
 * response gets 412 for a write that applied, and the id read back says it did (no second write).
 * Uploads are simple (one request) with checksum validation off, because on a mismatch the SDK
 * deletes the object without a precondition, which could delete a newer leader's data.
 *
 * Never change the term with a metadata-only update (`setMetadata`): GCS keeps the generation
 * then, so a concurrent writer's `ifGenerationMatch` would not notice. `fencedWrite` always
 * uploads. Node only (the GCS SDK is); it takes your `File` and never loads the SDK itself.
 */
import type { File, FileMetadata } from "@google-cloud/storage";
import { LeaseValidationError } from "../errors.js";
import {
  type Body,
  type Changed,
  changed,
  fencedUpload,
  lowerCaseKey,
  type ObjectState,
  objectFenceSchema,
  type UploadFenceOptions,
  uploadFields,
} from "./object-fence.js";

export { FenceCorruptError, StaleTermError } from "./fence.js";

/** Custom metadata key holding the object's fence unless you name another (`termKey`). */
export const DEFAULT_TERM_KEY = "leasehold-term";
/** Custom metadata key of the write id that recognises our own retried upload. */
export const WRITE_ID_KEY = "leasehold-write-id";

/** `contentType` defaults to the SDK's guess from the object name; `metadata` is custom metadata. */
export type FencedWriteOptions = UploadFenceOptions;

export interface FencedWriteResult {
  /** The generation this write created. */
  generation: string;
  /** Rounds it took (1 unless another writer with a term <= mine wrote in between). */
  attempts: number;
}

const optionsSchema = objectFenceSchema({
  keyRule: lowerCaseKey,
  defaultTermKey: DEFAULT_TERM_KEY,
  extra: uploadFields,
});

/**
 * Uploads `options.data` to `file` with the writer's term beside it, only if the object's stored
 * term is absent or <= `options.term` (read + compare-and-swap on the generation). Throws
 * `StaleTermError` (with the stored term) when a newer term has written the object,
 * `FenceCorruptError` when its stored term is not a whole number, `LeaseValidationError` for bad
 * options, and the SDK's own error for anything else (a timeout leaves the outcome unknown;
 * repeating the call with the same term is allowed by the fence).
 */
export async function fencedWrite(file: File, options: FencedWriteOptions): Promise<FencedWriteResult> {
  const { version, attempts } = await fencedUpload(optionsSchema, options, { writeIdKey: WRITE_ID_KEY }, (o) => {
    if (typeof (file as { save?: unknown } | null)?.save !== "function") {
      throw new LeaseValidationError("fencedWrite", [{ path: "file", message: "expected a File (bucket.file(name))" }]);
    }
    return {
      resource: `gs://${file.bucket.name}/${file.name}`,
      read: (withContent) => readObject(file, withContent),
      write: (body, metadata, generation) => upload(file, body, metadata, generation, o.contentType),
    };
  });
  return { generation: version, attempts };
}

/** The object's generation and custom metadata, with the content of exactly that generation when asked. */
async function readObject(file: File, withContent: boolean): Promise<ObjectState | null | Changed> {
  let metadata: FileMetadata;
  try {
    [metadata] = await file.getMetadata();
  } catch (error) {
    if (httpStatus(error) === 404) return null;
    throw error;
  }
  const generation = String(metadata.generation);
  const custom = Object.fromEntries(
    Object.entries(metadata.metadata ?? {}).map(([k, v]) => [k, v === null || v === undefined ? undefined : String(v)]),
  );
  if (!withContent) return { version: generation, metadata: custom };
  try {
    const [content] = await file.bucket.file(file.name, { generation }).download();
    return { version: generation, metadata: custom, content };
  } catch (error) {
    if (httpStatus(error) === 404) return changed(error); // that generation was replaced before we could read it
    throw error;
  }
}

async function upload(
  file: File,
  body: Body,
  metadata: Record<string, string>,
  generation: string | null,
  contentType: string | undefined,
): Promise<string | Changed> {
  try {
    await file.save(body, {
      resumable: false,
      validation: false,
      preconditionOpts: { ifGenerationMatch: generation ?? "0" },
      metadata: { ...(contentType === undefined ? {} : { contentType }), metadata },
    });
    return String(file.metadata.generation);
  } catch (error) {
    if (httpStatus(error) === 412) return changed(error);
    throw error;
  }
}

function httpStatus(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : undefined;
}
