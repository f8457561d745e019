/**
 * Fenced writes to an Amazon S3 object (`leasehold/fencing/s3`), on @aws-sdk/client-s3 and S3's
 * conditional writes. The object keeps the term of its last writer in its user metadata (default
 * `x-amz-meta-leasehold-term`), written in the same `PutObject` as the data. S3 cannot compare a
 * metadata value on write, only the ETag, so a write is a read and a compare-and-swap (the loop
 * every object fence shares, ./object-fence.ts):
 *
 *   1. `HeadObject` (`GetObject` for a `data` function): the ETag and the stored term;
 *   2. stored term > mine: refuse (`StaleTermError`), nothing is sent;
 *   3. `PutObject` with `If-Match: <that ETag>` (`If-None-Match: *` when the object is absent);
 *   4. 412 `PreconditionFailed`, 409 `ConditionalRequestConflict` (another conditional write was in
 *      progress) or 404 `NoSuchKey` (deleted since the read): read again.
 *
 * An ETag is the MD5 of the object's bytes (except under SSE-KMS or SSE-C, and for multipart
 * uploads): writing bytes an older term wrote brings their ETag back, and a deposed leader that
 * read that ETag passes `If-Match` (ABA). A deposed leader can only hold ETags of bytes written
 * under older terms, so bytes that carry their term (as the recipe's do) close the hole. The
 * helper cannot change your bytes; it refuses, before sending, the case a read can see (the
 * very bytes the object holds under an older term or none: `LeaseValidationError` on `data`),
 * and docs/fencing.md says to put the term in the bytes for the rest (A by term 1, B by term 2,
 * then A again by term 2).
 *
 * Every `PutObject` also stores a random write id (`x-amz-meta-leasehold-write-id`): a client that
 * retries an applied `PutObject` whose answer was lost gets 412, and the id read back says it
 * applied (no second write). Node only, as the S3 store (the SDK cannot parse S3's XML in
 * workerd); the SDK is an optional peer, loaded on first import; it takes your `S3Client`.
 */
import { createHash } from "node:crypto";
import type { PutObjectCommandInput, S3Client } from "@aws-sdk/client-s3";
import { type FieldIssue, LeaseValidationError } from "../errors.js";
import { importPeer } from "../peer.js";
import {
  type Body,
  type Changed,
  changed,
  checkFenceKeys,
  fencedObjectWrite,
  lowerCaseKey,
  type ObjectFenceOptions,
  type ObjectState,
  objectFenceSchema,
  parseFenceOptions,
  signalField,
  signalOptions,
} from "./object-fence.js";

export { FenceCorruptError, StaleTermError } from "./fence.js";

const { GetObjectCommand, HeadObjectCommand, PutObjectCommand } = await importPeer(
  "@aws-sdk/client-s3",
  "@aws-sdk/client-s3@3",
  () => import("@aws-sdk/client-s3"),
);

/** User metadata key (`x-amz-meta-…`) holding the object's fence unless you name another. */
export const DEFAULT_TERM_KEY = "leasehold-term";
/** User metadata key of the write id that recognises our own retried `PutObject`. */
export const WRITE_ID_KEY = "leasehold-write-id";

/** Your `PutObject` input without the parts the fence owns: the body comes from `options.data`. */
export type FencedPutObjectInput = Omit<PutObjectCommandInput, "Body" | "IfMatch" | "IfNoneMatch">;

export interface S3FenceOptions extends ObjectFenceOptions {
  /** User metadata key holding the fence. Default "leasehold-term". */
  termKey?: string;
  /** Passed to every `client.send`. */
  abortSignal?: AbortSignal;
}

export interface FencedPutObjectResult {
  /** The ETag of the object this write created. */
  etag: string;
  /** Rounds it took (1 unless another writer with a term <= mine wrote in between). */
  attempts: number;
}

const optionsSchema = objectFenceSchema({
  keyRule: lowerCaseKey,
  defaultTermKey: DEFAULT_TERM_KEY,
  extra: signalField,
});

/**
 * Sends `input` as a `PutObject` of `options.data` with the writer's term in its metadata, only if
 * the object's stored term is absent or <= `options.term` (a read, then `If-Match` on the ETag
 * read). Throws `StaleTermError` (with the stored term) when a newer term has written the object,
 * `FenceCorruptError` when its stored term is not a whole number, `LeaseValidationError` for bad
 * input or options and for bytes whose ETag would not change (nothing is sent then), a
 * `LeaseholdError` after `maxAttempts` rounds lost to writers whose terms are not newer, and the
 * SDK's own error for anything else (a timeout leaves the outcome unknown; repeating the call with
 * the same term is allowed by the fence).
 */
export async function fencedPutObject(
  client: S3Client,
  input: FencedPutObjectInput,
  options: S3FenceOptions,
): Promise<FencedPutObjectResult> {
  const issues = checkInput(input);
  if (typeof (client as { send?: unknown } | null)?.send !== "function") {
    issues.push({ path: "client", message: "expected an S3Client" });
  }
  if (issues.length > 0) throw new LeaseValidationError("fencedPutObject", issues);
  const o = parseFenceOptions("fencedPutObject options", optionsSchema, options);
  checkFenceKeys("fencedPutObject", { termKey: o.termKey, writeIdKey: WRITE_ID_KEY }, input.Metadata, "input.Metadata");
  const send = () => signalOptions(o.abortSignal);
  const { Bucket, Key } = input as { Bucket: string; Key: string };
  const { version, attempts } = await fencedObjectWrite(
    {
      resource: `s3://${Bucket}/${Key}`,
      read: (withContent) => readObject(client, Bucket, Key, withContent, send),
      beforeWrite: (body, current, stored, term) => refuseUnchangedEtag(body, current, stored, term),
      async write(body, metadata, etag): Promise<string | Changed> {
        try {
          const out = await client.send(
            new PutObjectCommand({
              ...input,
              Body: body,
              Metadata: metadata,
              ...(etag === null ? { IfNoneMatch: "*" } : { IfMatch: etag }),
            }),
            send(),
          );
          return out.ETag ?? "";
        } catch (error) {
          const { status, name } = failure(error);
          // 412: replaced since the read; 409: another conditional write was in progress (it did
          // not apply); 404 on If-Match: deleted since the read. Each: read again.
          if (status === 412 || (status === 409 && name === "ConditionalRequestConflict")) return changed(error);
          if (status === 404 && etag !== null) return changed(error);
          throw error;
        }
      },
    },
    { ...o, writeIdKey: WRITE_ID_KEY, metadata: input.Metadata },
  );
  return { etag: version, attempts };
}

async function readObject(
  client: S3Client,
  Bucket: string,
  Key: string,
  withContent: boolean,
  send: () => { abortSignal?: AbortSignal },
): Promise<ObjectState | null> {
  try {
    if (!withContent) {
      const head = await client.send(new HeadObjectCommand({ Bucket, Key }), send());
      return { version: head.ETag ?? "", metadata: head.Metadata ?? {} };
    }
    const got = await client.send(new GetObjectCommand({ Bucket, Key }), send());
    const content = (await got.Body?.transformToByteArray()) ?? new Uint8Array();
    return { version: got.ETag ?? "", metadata: got.Metadata ?? {}, content };
  } catch (error) {
    if (failure(error).status === 404) return null;
    throw error;
  }
}

/**
 * The ABA a read cannot see coming, refused where it can: bytes equal to the ones the object holds
 * (its ETag is their MD5) under an older term, or none, would leave the ETag as it is, so a deposed
 * leader that read it would still pass `If-Match`.
 */
function refuseUnchangedEtag(body: Body, current: ObjectState | null, stored: number | undefined, term: number): void {
  if (current === null || (stored !== undefined && stored >= term)) return;
  const md5 = `"${createHash("md5").update(body).digest("hex")}"`;
  if (md5 !== current.version) return;
  throw new LeaseValidationError("fencedPutObject", [
    {
      path: "options.data",
      message: `is the very bytes the object holds (ETag ${current.version}) under ${stored === undefined ? "no term" : `term ${stored}`}: S3's ETag is their MD5 and would not change, so a deposed leader that read it would still pass If-Match; make each term's bytes differ, e.g. put the term in them (docs/fencing.md)`,
    },
  ]);
}

function checkInput(input: FencedPutObjectInput): FieldIssue[] {
  if (input === null || typeof input !== "object") return [{ path: "input", message: "expected a PutObject input" }];
  const issues: FieldIssue[] = [];
  for (const field of ["Bucket", "Key"] as const) {
    if (typeof input[field] !== "string" || input[field] === "") {
      issues.push({ path: `input.${field}`, message: `expected the object's ${field.toLowerCase()}` });
    }
  }
  const owned = input as { Body?: unknown; IfMatch?: unknown; IfNoneMatch?: unknown };
  if (owned.Body !== undefined) issues.push({ path: "input.Body", message: "pass the content as options.data" });
  for (const field of ["IfMatch", "IfNoneMatch"] as const) {
    if (owned[field] !== undefined) issues.push({ path: `input.${field}`, message: "is set by the fence" });
  }
  return issues;
}

/** The SDK has no error classes for 412/409: status and name come from `$metadata` and `name`. */
function failure(error: unknown): { status: number | undefined; name: string } {
  const e = error as { name?: unknown; $metadata?: { httpStatusCode?: unknown } } | null;
  const status = e?.$metadata?.httpStatusCode;
  return { status: typeof status === "number" ? status : undefined, name: typeof e?.name === "string" ? e.name : "" };
}
