/**
 * What a holder or a member proves (docs/security.md): the `instance` it picked at start-up. The
 * server keeps only its SHA-256 digest, in the record's typed protocol field `holderDigest`
 * (docs/design.md §1), never the instance itself; no response shows the digest. Runtime-neutral
 * (Web Crypto).
 */
import type { LeaseRecord } from "../lease.js";

/** SHA-256 of the instance, base64url without padding: 43 characters. */
export async function instanceDigest(instance: string): Promise<string> {
  const bytes = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(instance)));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The digest a record carries, or undefined (a record written by a library elector, or before digests). */
export function digestOf(record: LeaseRecord): string | undefined {
  return record.holderDigest;
}
