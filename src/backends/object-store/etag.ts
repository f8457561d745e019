/**
 * ETags as revisions (S3, Azure Blob): opaque, but these stores only ever issue quoted ones, so
 * anything else handed back as a revision came from elsewhere and is refused before any request.
 */
import { LeaseValidationError } from "../../errors.js";
import type { Revision } from "../../lease.js";

/** An ETag as both services send it: a quoted string without quotes or spaces inside. */
export const ETAG_PATTERN = /^"[\x21\x23-\x7e]{1,254}"$/;

/** The revision as an ETag, or a LeaseValidationError naming `service` ("S3", "Azure"). */
export function parseEtag(revision: Revision, service: string): string {
  if (typeof revision === "string" && ETAG_PATTERN.test(revision)) return revision;
  throw new LeaseValidationError("revision", [
    {
      path: "expected",
      message: `expected an ${service} ETag this store issued (a quoted string), got ${JSON.stringify(revision)}`,
    },
  ]);
}
