import type { BlockBlobClient } from "@azure/storage-blob";
import { fencedWrite } from "leasehold/fencing/azure-blob";

const status = (error: unknown) => (error as { statusCode?: number }).statusCode;

// The blob keeps its writer's term in its metadata (Azure names are C# identifiers: no hyphens),
// written by the same Put Blob as the data. Azure compares only the ETag on write, so: read the
// ETag and the term, compare, then upload only if the ETag is still the one read (If-Match;
// If-None-Match: * while the blob is absent). On 412 or 409 someone wrote in between: read again.
// Azure's ETags change on every write, so unlike S3 the same bytes may be written again.
export async function saveReport(blob: BlockBlobClient, body: string, term: number): Promise<boolean> {
  for (;;) {
    let etag: string | undefined; // none: the blob does not exist yet
    let stored = 0;
    try {
      const properties = await blob.getProperties();
      etag = properties.etag;
      stored = Number(properties.metadata?.term ?? 0);
    } catch (error) {
      if (status(error) !== 404) throw error;
    }
    // Refused: a newer leader has written (or the stored term is not a number). Stop acting as leader.
    if (!(stored <= term)) return false;
    try {
      await blob.upload(body, Buffer.byteLength(body), {
        metadata: { term: String(term) },
        conditions: etag === undefined ? { ifNoneMatch: "*" } : { ifMatch: etag },
      });
      return true;
    } catch (error) {
      if (status(error) !== 412 && status(error) !== 409) throw error;
    }
  }
}

// The same with the helper: the term in metadata (leasehold_term), a write id that recognises a
// retry of its own write, bounded rounds, and StaleTermError (with the blob's term) when refused.
export async function saveReportWithHelper(blob: BlockBlobClient, body: string, term: number): Promise<void> {
  await fencedWrite(blob, { term, data: body, contentType: "text/plain" });
}
