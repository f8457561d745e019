import { HeadObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { fencedPutObject } from "leasehold/fencing/s3";

const status = (error: unknown) => (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

// The object keeps its writer's term in user metadata, written by the same PutObject as the data.
// S3 compares only the ETag on write, so: read the ETag and the term, compare, then put only if
// the ETag is still the one read (If-Match; If-None-Match: * while the object is absent). On 412
// (or 409, another conditional write in progress) someone wrote in between: read again.
// The ETag is the MD5 of the bytes: bytes an older term wrote, written again, bring its ETag back
// and a deposed leader holding that ETag passes If-Match. So each body carries its term.
export async function saveReport(client: S3Client, bucket: string, key: string, body: string, term: number) {
  for (;;) {
    let etag: string | undefined; // none: the object does not exist yet
    let stored = 0;
    try {
      const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      etag = head.ETag;
      stored = Number(head.Metadata?.term ?? 0);
    } catch (error) {
      if (status(error) !== 404) throw error;
    }
    // Refused: a newer leader has written (or the stored term is not a number). Stop acting as leader.
    if (!(stored <= term)) return false;
    try {
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: `${body}\nterm ${term}`,
          Metadata: { term: String(term) },
          ...(etag === undefined ? { IfNoneMatch: "*" } : { IfMatch: etag }),
        }),
      );
      return true;
    } catch (error) {
      if (status(error) !== 412 && status(error) !== 409) throw error;
    }
  }
}

// The same with the helper: your own PutObject input, the term in metadata (leasehold-term), a
// write id that recognises an SDK retry of its own write, bounded rounds, StaleTermError (with the
// object's term) when refused, and a refusal of bytes the object already holds under an older term.
export async function saveReportWithHelper(client: S3Client, bucket: string, key: string, body: string, term: number) {
  await fencedPutObject(client, { Bucket: bucket, Key: key, ContentType: "text/plain" }, { term, data: body });
}
