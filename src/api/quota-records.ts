/**
 * The server's own records of how many records each token has created under each of its
 * prefixes (docs/security.md, "Bounds": `recordsPerPrefix`), so a quota is a maintained count, not
 * a recount by listing. One record per (token, prefix), at a name no caller may use:
 * `_quota/q-<32 hex digits>` (SHA-256 of the token's id and the prefix: a protocol record's
 * name, src/lease.ts), refused by every route (400) and left out of every listing and stream the API serves. Its metadata
 * says whose count it is, for an operator reading the store: `records` (the count), `prefix` and
 * `token` (the token's name, or "unnamed"). It is free at term 0 and nothing else, so no rule of a
 * lease (the term rules, a group's config) ever applies to it. Runtime-neutral.
 */
import type { LeaseRecord } from "../lease.js";
import { MIN_LEASE_MS, newWriteId, recordRole } from "../lease.js";
import type { TokenScope } from "./auth.js";
import { ProblemError } from "./problems.js";

/** Where the counts live: a reserved top-level segment no lease name can hold (src/lease.ts). */
export const QUOTA_RECORD_PREFIX = "_quota/";

/** Is `name` one of the server's own count records? */
export const isQuotaRecord = (name: string): boolean => recordRole(name) === "quota";

/**
 * 400 for a route naming one of the server's own records: the API serves none of them (nor lists
 * them), and its wire pattern for names leaves them out (SERVED_NAME_PATTERN).
 */
export function refuseServerName(name: string): string {
  if (!isQuotaRecord(name)) return name;
  throw new ProblemError(
    "validation",
    `"${name}" is a record of the server's own (a quota count): no route serves it`,
    {
      errors: [{ path: "name", message: `expected a name not of the form ${QUOTA_RECORD_PREFIX}q-<32 hex digits>` }],
    },
  );
}

async function hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Who a count belongs to: a token by its name (unnamed: its digest), or everyone without tokens. */
export interface QuotaOwner {
  /** Stable across restarts and replicas sharing one configuration. */
  id: string;
  /** For the record's metadata: the token's name, "unnamed" or "anyone". */
  label: string;
}

const owners = new WeakMap<object, Promise<QuotaOwner>>();

/** The owner of a caller's counts: `scope` is its token's, or undefined without tokens. */
export function quotaOwner(scope: TokenScope | undefined): Promise<QuotaOwner> {
  if (!scope) return Promise.resolve({ id: "anyone", label: "anyone" });
  let owner = owners.get(scope);
  if (!owner) {
    owner =
      scope.name !== undefined
        ? Promise.resolve({ id: `name:${scope.name}`, label: scope.name })
        : hex(scope.token).then((digest) => ({ id: `token:${digest}`, label: "unnamed" }));
    owners.set(scope, owner);
  }
  return owner;
}

/** The count record of `owner`'s records under `prefix`. */
export async function quotaRecordName(owner: QuotaOwner, prefix: string): Promise<string> {
  return `${QUOTA_RECORD_PREFIX}q-${(await hex(`${owner.id}\n${prefix}`)).slice(0, 32)}`;
}

/** The count a record holds; one that cannot be read counts as `ceiling` (over-counting refuses, it never lets through). */
export function countOf(record: LeaseRecord, ceiling: number): number {
  const text = record.metadata.records;
  return text !== undefined && /^(0|[1-9][0-9]{0,15})$/.test(text) ? Number(text) : ceiling;
}

export function quotaRecord(name: string, count: number, owner: QuotaOwner, prefix: string, wall: number): LeaseRecord {
  return {
    name,
    holder: null,
    term: 0,
    leaseMs: MIN_LEASE_MS,
    acquiredAt: wall,
    renewedAt: wall,
    metadata: { records: String(count), prefix, token: owner.label },
    writeId: newWriteId(),
  };
}
