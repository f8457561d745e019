/**
 * The fenced write every object store shares (GCS, S3, Azure Blob): the object keeps the term of
 * its last writer in its own metadata, written in the same upload as the data. No object store can
 * compare a metadata value on write, only the object's version (a GCS generation, an S3 or Azure
 * ETag), so a write is a read and a compare-and-swap:
 *
 *   1. read the object's version and stored term (and its content, for a `data` function);
 *   2. stored term > mine: refuse (`StaleTermError`), nothing is sent;
 *   3. upload data + my term on the condition that the version is still the one read ("absent"
 *      when there was none);
 *   4. the condition failed: someone wrote in between; back to 1 (a newer term refuses there).
 *
 * The version alone is not the fence: it only says "nobody wrote since I read". A deposed leader
 * that reads after the new leader wrote gets the new version and would pass; only the stored term
 * tells it a newer leader exists.
 *
 * Every upload also stores a random write id: a client that retries a lost response gets "changed"
 * for a write that applied, and the id read back says it did (no second write). Each backend
 * module (./gcs.ts, ./s3.ts, ./azure-blob.ts) is an `ObjectTarget` for one object plus its option
 * checks; the loop, its bound and its errors are here. Runtime-neutral.
 */
import { z } from "zod";
import { LeaseholdError, LeaseValidationError } from "../errors.js";
import { newWriteId, zodIssues } from "../lease.js";
import { parseStoredTerm, refuseOlder, termSchema } from "./fence.js";

export type Body = string | Uint8Array;

/** What every object fence accepts (each backend adds its own fields). */
export interface ObjectFenceOptions {
  /** The writer's term: the upload applies only if the object's stored term is absent or <= this. */
  term: number;
  /**
   * The new content, or a function of the current content (`null` when the object is absent) for
   * read-modify-write. The function may run more than once: once per attempt, each time with the
   * content of the version that attempt will replace.
   */
  data: Body | ((current: Uint8Array | null) => Body | Promise<Body>);
  /** Metadata key holding the fence (each backend has its default). */
  termKey?: string;
  /** Read + upload rounds before giving up while writers with terms <= mine keep winning. Default 5. */
  maxAttempts?: number;
}

/** For backends whose helper takes the upload's own fields in its options (GCS, Azure Blob). */
export interface UploadFenceOptions extends ObjectFenceOptions {
  /** Content type of the upload. Default: the backend's. */
  contentType?: string;
  /** Your own metadata, stored with each upload (the fence's keys are reserved). */
  metadata?: Record<string, string>;
}

/** The schema of `UploadFenceOptions`' own fields, for `objectFenceSchema`'s `extra`. */
export const uploadFields = {
  contentType: z.string({ error: "expected a content type" }).min(1).optional(),
  metadata: z.record(z.string(), z.string({ error: "expected a string value" })).optional(),
};

/** The schema of an `abortSignal` option, for backends that pass one to every request (S3, Azure Blob). */
export const signalField = {
  abortSignal: z.custom<AbortSignal>((s) => s instanceof AbortSignal, { error: "expected an AbortSignal" }).optional(),
};

/**
 * The request options carrying `signal`: a fresh object per call, because an SDK may write its
 * defaults (conditions, retries) into the options it is given.
 */
export function signalOptions(signal: AbortSignal | undefined): { abortSignal?: AbortSignal } {
  return signal ? { abortSignal: signal } : {};
}

/** A metadata key as GCS and S3 (`x-amz-meta-…`) take it: lower case, as S3 returns keys anyway. */
export const lowerCaseKey = z
  .string({ error: "expected a metadata key" })
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, { error: "expected 1-63 characters of a-z 0-9 _ -" });

/**
 * A version condition that failed, or a version replaced between two reads: read and try again.
 * `cause` is the backend's answer (a 412), kept as the cause of what the loop throws after it.
 */
export interface Changed {
  changed: true;
  cause?: unknown;
}

export const changed = (cause?: unknown): Changed => ({ changed: true, ...(cause === undefined ? {} : { cause }) });
const isChanged = (value: unknown): value is Changed => (value as Changed | null)?.changed === true;

/** The object as one read saw it. */
export interface ObjectState {
  /** Its version (generation, ETag), the condition of the next upload. */
  version: string;
  /** Its custom metadata (keys as the backend returns them). */
  metadata: Record<string, string | undefined>;
  /** Its content, read only when asked for (`withContent`). */
  content?: Uint8Array;
}

/** One object of one backend, as the loop sees it. */
export interface ObjectTarget {
  /** The object for messages, e.g. `s3://bucket/key`. */
  resource: string;
  /** Reads the object (its content too when asked); null when absent, `changed` when replaced mid-read. */
  read(withContent: boolean): Promise<ObjectState | null | Changed>;
  /**
   * Uploads `body` with `metadata` only if the object is still `version` (null: only if absent).
   * Resolves with the new version, or `changed` when the condition failed. Anything else is thrown.
   */
  write(body: Body, metadata: Record<string, string>, version: string | null): Promise<string | Changed>;
  /**
   * Called once the body of an attempt is known, before its upload, with the object as read and
   * its stored term: a backend refuses there what its versions cannot fence (S3: the same bytes
   * again, whose ETag would not change).
   */
  beforeWrite?(body: Body, current: ObjectState | null, stored: number | undefined, term: number): void;
}

export interface ObjectFenceResult {
  /** The version this write created. */
  version: string;
  /** Rounds it took (1 unless another writer with a term <= mine wrote in between). */
  attempts: number;
}

const DEFAULT_MAX_ATTEMPTS = 5;

/**
 * The options schema of one backend's fence: the shared fields, `termKey` a metadata key of
 * `keyRule` defaulting to `defaultTermKey`, and `extra` fields of the backend's own.
 */
export function objectFenceSchema<Extra extends z.ZodRawShape>(rules: {
  keyRule: z.ZodString;
  defaultTermKey: string;
  extra: Extra;
}) {
  const { keyRule, defaultTermKey, extra } = rules;
  return z.strictObject({
    term: termSchema,
    data: z.custom<ObjectFenceOptions["data"]>(
      (d) => typeof d === "string" || d instanceof Uint8Array || typeof d === "function",
      { error: "expected a string, a Uint8Array or a function of the current content" },
    ),
    termKey: keyRule.default(defaultTermKey),
    maxAttempts: z
      .number({ error: "expected a number of attempts" })
      .int({ error: "expected a whole number" })
      .min(1, { error: "expected at least 1" })
      .max(100, { error: "expected at most 100" })
      .default(DEFAULT_MAX_ATTEMPTS),
    ...extra,
  });
}

/** Parses `options` with `schema`, or throws a LeaseValidationError naming every field (`what`). */
export function parseFenceOptions<S extends z.ZodType>(what: string, schema: S, options: unknown): z.output<S> {
  const parsed = schema.safeParse(options);
  if (!parsed.success) throw new LeaseValidationError(what, zodIssues(parsed.error));
  return parsed.data;
}

/**
 * Refuses (LeaseValidationError, `what`) a `termKey` that is the write id's key, and your own
 * metadata (at `path`) using either fence key, compared without case (S3 and Azure keys travel as
 * case-insensitive HTTP headers), or a key the backend cannot store (`keyRule`).
 */
export function checkFenceKeys(
  what: string,
  keys: { termKey: string; writeIdKey: string },
  metadata: Record<string, unknown> | undefined,
  path: string,
  keyRule?: z.ZodString,
): void {
  const reserved = new Set([keys.termKey.toLowerCase(), keys.writeIdKey.toLowerCase()]);
  const issues = Object.keys(metadata ?? {}).flatMap((k) => {
    if (reserved.has(k.toLowerCase())) return [{ path: `${path}.${k}`, message: "is reserved for the fence" }];
    const checked = keyRule?.safeParse(k);
    return checked?.success === false
      ? [{ path: `${path}.${k}`, message: checked.error.issues[0]?.message ?? "" }]
      : [];
  });
  if (keys.termKey.toLowerCase() === keys.writeIdKey.toLowerCase()) {
    issues.push({ path: "termKey", message: "is reserved" });
  }
  if (issues.length > 0) throw new LeaseValidationError(what, issues);
}

/** What `fencedUpload` needs of the parsed options of an upload fence. */
type ParsedUploadFence = Omit<Parameters<typeof fencedObjectWrite>[1], "writeIdKey"> & {
  contentType?: string | undefined;
};

/**
 * The `fencedWrite` of a backend whose options carry the upload's own fields (GCS, Azure Blob), so
 * both check in the same order before anything is sent: the options (each bad field named), the
 * fence's keys against your `metadata` (and, with `keyRule`, what the backend can store), then
 * `target`, built from the parsed options, which may refuse its object. Then the loop.
 */
export async function fencedUpload<S extends z.ZodType<ParsedUploadFence>>(
  schema: S,
  options: unknown,
  keys: { writeIdKey: string; keyRule?: z.ZodString },
  target: (o: z.output<S>) => ObjectTarget,
): Promise<ObjectFenceResult> {
  const o = parseFenceOptions("fencedWrite options", schema, options);
  checkFenceKeys(
    "fencedWrite options",
    { termKey: o.termKey, writeIdKey: keys.writeIdKey },
    o.metadata,
    "metadata",
    keys.keyRule,
  );
  return fencedObjectWrite(target(o), { ...o, writeIdKey: keys.writeIdKey });
}

/**
 * Writes `options.data` to `target` with the writer's term beside it, only if the object's stored
 * term is absent or <= `options.term` (read + compare-and-swap on the version). Throws
 * `StaleTermError` (with the stored term) when a newer term has written the object,
 * `FenceCorruptError` when its stored term is not a whole number, a `LeaseholdError` after
 * `maxAttempts` rounds lost to writers whose terms are not newer, and the backend's own error for
 * anything else (a timeout leaves the outcome unknown; repeating the call with the same term is
 * allowed by the fence).
 */
export async function fencedObjectWrite(
  target: ObjectTarget,
  o: {
    term: number;
    data: ObjectFenceOptions["data"];
    termKey: string;
    writeIdKey: string;
    maxAttempts: number;
    /** Your own metadata, stored with each upload. */
    metadata?: Record<string, string> | undefined;
  },
): Promise<ObjectFenceResult> {
  const writeId = newWriteId();
  let conflict: unknown;
  for (let attempt = 1; attempt <= o.maxAttempts; attempt++) {
    const current = await target.read(typeof o.data === "function");
    if (isChanged(current)) continue; // replaced while it was being read
    // Only reachable after a failed condition: a retried upload of ours had applied.
    if (current !== null && metadataValue(current.metadata, o.writeIdKey) === writeId) {
      return { version: current.version, attempts: attempt - 1 };
    }
    const stored =
      current === null ? undefined : parseStoredTerm(target.resource, metadataValue(current.metadata, o.termKey));
    refuseOlder(target.resource, o.term, stored, conflict === undefined ? undefined : { cause: conflict });
    const body = typeof o.data === "function" ? await o.data(current?.content ?? null) : o.data;
    target.beforeWrite?.(body, current, stored, o.term);
    const metadata = { ...o.metadata, [o.termKey]: String(o.term), [o.writeIdKey]: writeId };
    const written = await target.write(body, metadata, current === null ? null : current.version);
    if (!isChanged(written)) return { version: written, attempts: attempt };
    conflict = written.cause;
  }
  throw new LeaseholdError(
    `fenced write to ${target.resource} gave up after ${o.maxAttempts} attempts: the object kept changing under writers whose terms are not newer than ${o.term}`,
    { cause: conflict },
  );
}

/** A metadata value by key, whatever case the backend returned the key in. */
function metadataValue(metadata: Record<string, string | undefined>, key: string): string | undefined {
  if (Object.hasOwn(metadata, key)) return metadata[key];
  const lower = key.toLowerCase();
  for (const [k, v] of Object.entries(metadata)) if (k.toLowerCase() === lower) return v;
  return undefined;
}
