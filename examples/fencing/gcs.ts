import type { File } from "@google-cloud/storage";
import { fencedWrite } from "leasehold/fencing/gcs";

// The object keeps its writer's term in custom metadata, uploaded together with the data. GCS
// cannot compare metadata on write, so: read the generation and the term, compare, then upload
// only if the generation is still the one read (compare-and-swap). On 412 someone wrote in
// between: read again (if that was a newer term, the check refuses).
export async function saveReport(file: File, body: string, term: number): Promise<boolean> {
  for (;;) {
    let generation = "0"; // ifGenerationMatch 0: the object must not exist yet
    let stored = 0;
    try {
      const [metadata] = await file.getMetadata();
      generation = String(metadata.generation);
      stored = Number(metadata.metadata?.term ?? 0);
    } catch (error) {
      if ((error as { code?: unknown }).code !== 404) throw error;
    }
    // Refused: a newer leader has written (or the stored term is not a number). Stop acting as leader.
    if (!(stored <= term)) return false;
    try {
      await file.save(body, {
        resumable: false,
        validation: false, // on a checksum mismatch the SDK would delete the object unconditionally
        preconditionOpts: { ifGenerationMatch: generation },
        metadata: { metadata: { term: String(term) } },
      });
      return true;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 412) throw error;
    }
  }
}

// The same with the helper: also recognises its own write after an SDK retry (by a write id),
// bounds the rounds, and throws StaleTermError (with the object's term) when refused.
export async function saveReportWithHelper(file: File, body: string, term: number): Promise<void> {
  await fencedWrite(file, { term, data: body, contentType: "text/plain" });
}
