/**
 * Fenced writes to a Google Cloud Storage object (`leasehold/fencing/gcs`). The object keeps the
 * term of its last writer in its custom metadata (default key `leasehold-term`), written in the
 * same upload as the data. GCS has no "compare this metadata" precondition, so a write is a read
 * and a compare-and-swap:
 *
 *   1. read the object's metadata: its `generation` and its stored term;
 *   2. stored term > mine: refuse (`StaleTermError`), nothing is sent;
 *   3. upload data + my term with `ifGenerationMatch=<that generation>` (0 when absent);
 *   4. 412: someone wrote in between; go back to 1 (if that was a newer term, step 2 refuses).
 *
 * The generation alone is not the fence: it only says "nobody wrote since I read". A deposed
 * leader that reads *after* the new leader wrote gets the new generation and its write would pass;
 * only the stored term tells it that a newer leader exists.
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
import { z } from "zod";
import { LeaseholdError, LeaseValidationError } from "../errors.js";
import { newWriteId, zodIssues } from "../lease.js";
import { parseStoredTerm, StaleTermError, termSchema } from "./fence.js";

export { FenceCorruptError, StaleTermError } from "./fence.js";

/** Custom metadata key holding the object's fence unless you name another. */
export const DEFAULT_TERM_KEY = "leasehold-term";
/** Custom metadata key of the write id that recognises our own retried upload. */
export const WRITE_ID_KEY = "leasehold-write-id";

type Body = string | Uint8Array;

export interface FencedWriteOptions {
  /** The writer's term: the upload applies only if the object's stored term is absent or <= this. */
  term: number;
  /**
   * The new content, or a function of the current content (`null` when the object is absent) for
   * read-modify-write. The function may run more than once: once per attempt, each time with the
   * content of the generation that attempt will replace.
   */
  data: Body | ((current: Uint8Array | null) => Body | Promise<Body>);
  /** Content type of the upload. Default: the SDK's guess from the object name. */
  contentType?: string;
  /** Your own custom metadata, stored with each upload (the fence's keys are reserved). */
  metadata?: Record<string, string>;
  /** Custom metadata key holding the fence. Default "leasehold-term". */
  termKey?: string;
  /** Read + upload rounds before giving up while writers with terms <= mine keep winning. Default 5. */
  maxAttempts?: number;
}

export interface FencedWriteResult {
  /** The generation this write created. */
  generation: string;
  /** Rounds it took (1 unless another writer with a term <= mine wrote in between). */
  attempts: number;
}

const metadataKey = z
  .string({ error: "expected a metadata key" })
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, { error: "expected 1-63 characters of a-z 0-9 _ -" });

const optionsSchema = z
  .strictObject({
    term: termSchema,
    data: z.custom<FencedWriteOptions["data"]>(
      (d) => typeof d === "string" || d instanceof Uint8Array || typeof d === "function",
      { error: "expected a string, a Uint8Array or a function of the current content" },
    ),
    contentType: z.string({ error: "expected a content type" }).min(1).optional(),
    metadata: z.record(z.string(), z.string({ error: "expected a string value" })).optional(),
    termKey: metadataKey.default(DEFAULT_TERM_KEY),
    maxAttempts: z
      .number({ error: "expected a number of attempts" })
      .int({ error: "expected a whole number" })
      .min(1, { error: "expected at least 1" })
      .max(100, { error: "expected at most 100" })
      .default(5),
  })
  .superRefine((o, ctx) => {
    for (const key of [o.termKey, WRITE_ID_KEY]) {
      if (o.metadata !== undefined && Object.hasOwn(o.metadata, key)) {
        ctx.addIssue({ code: "custom", path: ["metadata", key], message: "is reserved for the fence" });
      }
    }
    if (o.termKey === WRITE_ID_KEY) ctx.addIssue({ code: "custom", path: ["termKey"], message: "is reserved" });
  });

interface Current {
  /** "0" when the object does not exist (what `ifGenerationMatch` expects for "absent"). */
  generation: string;
  term: number | undefined;
  writeId: unknown;
}

/**
 * Uploads `options.data` to `file` with the writer's term beside it, only if the object's stored
 * term is absent or <= `options.term` (read + compare-and-swap on the generation). Throws
 * `StaleTermError` (with the stored term) when a newer term has written the object,
 * `FenceCorruptError` when its stored term is not a whole number, `LeaseValidationError` for bad
 * options, and the SDK's own error for anything else (a timeout leaves the outcome unknown;
 * repeating the call with the same term is allowed by the fence).
 */
export async function fencedWrite(file: File, options: FencedWriteOptions): Promise<FencedWriteResult> {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) throw new LeaseValidationError("fencedWrite options", zodIssues(parsed.error));
  const o = parsed.data;
  if (typeof (file as { save?: unknown } | null)?.save !== "function") {
    throw new LeaseValidationError("fencedWrite", [{ path: "file", message: "expected a File (bucket.file(name))" }]);
  }
  const resource = `gs://${file.bucket.name}/${file.name}`;
  const writeId = newWriteId();
  let conflict: unknown;
  for (let attempt = 1; attempt <= o.maxAttempts; attempt++) {
    const current = await readFence(file, resource, o.termKey);
    // Only reachable after a 412: a retried upload of ours had applied.
    if (current.writeId === writeId) return { generation: current.generation, attempts: attempt - 1 };
    if (current.term !== undefined && current.term > o.term) {
      throw new StaleTermError(
        resource,
        o.term,
        current.term,
        conflict === undefined ? undefined : { cause: conflict },
      );
    }
    const body = typeof o.data === "function" ? await contentFor(file, current.generation, o.data) : o.data;
    if (body === undefined) continue; // that generation was replaced before we could read it
    try {
      await file.save(body, {
        resumable: false,
        validation: false,
        preconditionOpts: { ifGenerationMatch: current.generation },
        metadata: {
          ...(o.contentType === undefined ? {} : { contentType: o.contentType }),
          metadata: { ...o.metadata, [o.termKey]: String(o.term), [WRITE_ID_KEY]: writeId },
        },
      });
      return { generation: String(file.metadata.generation), attempts: attempt };
    } catch (error) {
      if (httpStatus(error) !== 412) throw error;
      conflict = error;
    }
  }
  throw new LeaseholdError(
    `fenced write to ${resource} gave up after ${o.maxAttempts} attempts: the object kept changing under writers whose terms are not newer than ${o.term}`,
    { cause: conflict },
  );
}

async function readFence(file: File, resource: string, termKey: string): Promise<Current> {
  let metadata: FileMetadata;
  try {
    [metadata] = await file.getMetadata();
  } catch (error) {
    if (httpStatus(error) === 404) return { generation: "0", term: undefined, writeId: undefined };
    throw error;
  }
  const custom = metadata.metadata ?? {};
  return {
    generation: String(metadata.generation),
    term: parseStoredTerm(resource, custom[termKey]),
    writeId: custom[WRITE_ID_KEY],
  };
}

/** The body of exactly `generation` handed to `update`; `undefined` when that generation is gone. */
async function contentFor(
  file: File,
  generation: string,
  update: (current: Uint8Array | null) => Body | Promise<Body>,
): Promise<Body | undefined> {
  if (generation === "0") return update(null);
  let content: Uint8Array;
  try {
    [content] = await file.bucket.file(file.name, { generation }).download();
  } catch (error) {
    if (httpStatus(error) === 404) return undefined;
    throw error;
  }
  return update(content);
}

function httpStatus(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : undefined;
}
