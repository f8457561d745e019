/**
 * How reserved metadata travels through the HTTP API (docs/design.md §1 "Reserved metadata"): a
 * record written through the HTTP store carries its `leasehold.*` keys (the library's bound-lease
 * keys, or the instance digest of an API that keeps its leases in another API) as
 * `proxied.leasehold.*`. The API behind keeps its own reserved keys, refuses callers' and shows
 * none, so each layer's keys stay its own. The HTTP store writes the escaped form and reads it
 * back; the API reads one escaped key, the bound lease's successor (`src/api/bound-leases.ts`).
 * Runtime-neutral.
 */
import { isReservedKey } from "../lease.js";

const PROXIED = "proxied.";

/** The key a reserved key travels as through the API. */
export const proxiedKey = (key: string): string => `${PROXIED}${key}`;

/** `metadata` as the API is sent it: every reserved key escaped. */
export function escapeReserved(metadata: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(metadata).map(([k, v]) => [isReservedKey(k) ? proxiedKey(k) : k, v]));
}

/** `metadata` as the API shows it, with the escaped reserved keys restored. */
export function unescapeReserved(metadata: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(metadata).map(([k, v]) => [
      k.startsWith(PROXIED) && isReservedKey(k.slice(PROXIED.length)) ? k.slice(PROXIED.length) : k,
      v,
    ]),
  );
}
