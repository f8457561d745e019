/**
 * A LeaseStore over the leasehold HTTP API, so the same Elector runs against a remote API
 * exactly as against a local store. `put` is the API's raw compare-and-swap (If-Match on the
 * revision; the token needs the verb `cas`); the server stamps `renewedAt` with its own clock.
 * `watch` follows the API's Server-Sent Events, so followers hear of a release without polling
 * (against an API that cannot stream, a buffered Lambda integration, it fails once with the API's
 * 501 and yields nothing after that: the elector polls).
 *
 * Each store has an `instance` (default: a random UUID per HttpStore), sent with every write: the
 * server lets only the instance that took a lease renew or release it, and refuses to give a lease
 * still held (by its own clock, with its skew bound) to anyone else. Such a refusal is a
 * `LeaseStillHeldError`, certainly not applied and not a conflict: an elector waits `retryMs`
 * and tries again, rather than at once (a takeover can so come up to one retry after the server's
 * expiry, docs/design.md §5). The record's protocol fields travel as typed fields of the wire
 * (`session`, `successor`); the instance proofs of an API that keeps its leases here travel as
 * `upstream`, which the API behind stores for it and never judges by.
 * Runtime-neutral (fetch only).
 */

import {
  LeaseConflictError,
  LeaseCorruptError,
  LeaseStillHeldError,
  LeaseStoreError,
  LeaseTermRuleError,
  LeaseValidationError,
} from "../../errors.js";
import { isLeaseholdApiError } from "../../http/api-error.js";
import { type ClientOptions, LeaseholdClient } from "../../http/client.js";
import type { LeaseListView, LeaseView } from "../../http/schemas.js";
import type {
  CallOptions,
  LeaseRecord,
  LeaseStore,
  Listed,
  ListOptions,
  Revision,
  Stored,
  StoreLimits,
} from "../../lease.js";
import { validatePrefix, validateRecord, validateRecordName } from "../../lease.js";
import { listedName, unreadable } from "../../listing.js";

export type HttpStoreOptions = ClientOptions;
/** What this store throws beside the contract's errors: the API's holding and term rules. */
export { isLeaseStillHeldError, isLeaseTermRuleError, LeaseStillHeldError, LeaseTermRuleError } from "../../errors.js";

export function fromView(view: LeaseView): Stored {
  const { expiresAt: _expiresAt, revision, upstream, ...fields } = view;
  const record = fields as LeaseRecord;
  if (upstream?.holderDigest !== undefined) record.holderDigest = upstream.holderDigest;
  if (upstream?.successorDigest !== undefined) record.successorDigest = upstream.successorDigest;
  return { record, revision };
}

/** A page of the API's listing as a store's entries, in name order: its records and, in place, those it cannot read. */
function listedOf(page: LeaseListView): Listed[] {
  const entries: Listed[] = page.leases.map(fromView);
  for (const u of page.unreadable ?? []) entries.push(unreadable(new LeaseCorruptError(u.name, u.errors)));
  return entries.sort((a, b) => (listedName(a) < listedName(b) ? -1 : listedName(a) > listedName(b) ? 1 : 0));
}

export class HttpStore implements LeaseStore {
  /** The API behind keeps its own quota counts, and counts this client's creates against its token. */
  readonly limits: StoreLimits = { serverRecords: false };
  readonly client: LeaseholdClient;

  constructor(options: HttpStoreOptions) {
    // A store call is one attempt: the elector decides about retries and ambiguity.
    this.client = new LeaseholdClient({ retries: 0, ...options });
  }

  async get(name: string, options?: CallOptions): Promise<Stored | null> {
    validateRecordName(name);
    try {
      const view = await this.client.get(name, options?.signal);
      return view ? fromView(view) : null;
    } catch (error) {
      throw this.mapError(error, `get "${name}"`, false, name);
    }
  }

  async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const {
      name,
      renewedAt: _renewedAt,
      holderDigest,
      successorDigest,
      upstream: _upstream,
      // A session's count of releases stays out of the API (which does not take it): followers
      // through the API hear of releases by push (docs/design.md §4 "Reading a bound lease").
      releases: _releases,
      ...rest
    } = validateRecord(next);
    const proofs = {
      ...(holderDigest === undefined ? {} : { holderDigest }),
      ...(successorDigest === undefined ? {} : { successorDigest }),
    };
    const body = Object.keys(proofs).length === 0 ? rest : { ...rest, upstream: proofs };
    try {
      return fromView(await this.client.put(name, body, expected, options?.signal));
    } catch (error) {
      if (isLeaseholdApiError(error) && error.status === 412) {
        throw new LeaseConflictError(name, error.problem?.lease ? fromView(error.problem.lease) : undefined, {
          cause: error,
        });
      }
      if (isLeaseholdApiError(error) && error.status === 409 && error.problem?.rule) {
        throw new LeaseTermRuleError(name, error.problem.rule, error.problem.detail);
      }
      const kind = isLeaseholdApiError(error) ? error.problem?.type.split(":").at(-1) : undefined;
      // Refused by the API's holding rules, certainly not applied: a lease still held, or a
      // protocol field this process may not write (a successor registration from the holder's own
      // process, a binding to a session it does not hold).
      if (
        isLeaseholdApiError(error) &&
        (kind === "conflict" || kind === "holder-in-use" || kind === "protocol-field")
      ) {
        // The server's own moment (freeInMs, to the millisecond) when it sent one, else Retry-After.
        const retryAfterMs =
          error.problem?.freeInMs ?? (error.retryAfter === undefined ? undefined : error.retryAfter * 1000);
        throw new LeaseStillHeldError(name, `HTTP store put "${name}": ${error.message}`, retryAfterMs, {
          cause: error,
        });
      }
      throw this.mapError(error, `put "${name}"`, true, name);
    }
  }

  /**
   * The API's clearing of a record it cannot read or judge (`leasehold release --force`; the token
   * needs the verb `force`): the released record. `term`: for a record the store cannot read.
   */
  async forceRelease(name: string, term: number | undefined): Promise<Stored> {
    validateRecordName(name);
    try {
      return fromView((await this.client.forceRelease(name, term === undefined ? {} : { term })).lease);
    } catch (error) {
      if (isLeaseholdApiError(error)) throw error; // the API's own words say what to do
      throw this.mapError(error, `force-release "${name}"`, true, name);
    }
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<Listed> {
    validatePrefix(prefix);
    let cursor = options.startAfter;
    let left = options.limit ?? Number.POSITIVE_INFINITY;
    while (left > 0) {
      let page: Awaited<ReturnType<LeaseholdClient["list"]>>;
      try {
        page = await this.client.list({
          prefix,
          limit: Math.min(left, 1000),
          ...(cursor === undefined ? {} : { cursor }),
        });
      } catch (error) {
        throw this.mapError(error, `list "${prefix}"`, false);
      }
      const entries = listedOf(page);
      for (const entry of entries) yield entry;
      left -= entries.length;
      if (page.next === null) return;
      cursor = page.next;
    }
  }

  async *watch(name: string, signal: AbortSignal): AsyncIterable<Stored | null> {
    // The API said once that it cannot stream (501: a buffered Lambda integration): its callers
    // poll instead, and are not told again at every retry.
    if (this.streamsRefused) return;
    try {
      for await (const event of this.client.watch(name, signal)) yield event.lease ? fromView(event.lease) : null;
    } catch (error) {
      if (isLeaseholdApiError(error) && error.status === 501) this.streamsRefused = true;
      throw error;
    }
  }

  /** Set once the API answered a watch 501 (it cannot stream). */
  private streamsRefused = false;

  /**
   * 4xx: the request was refused, nothing applied. No answer or 5xx: a write may have applied,
   * but for 503 over-capacity, which the server answers before doing anything (a busy server
   * sheds acquisitions and reads first: src/api/admission.ts). 401/403 stay a `LeaseholdApiError`: a missing or wrong token is a configuration error that no
   * retry fixes, not a store outage (the CLI names LEASEHOLD_TOKEN for it).
   */
  private mapError(error: unknown, what: string, write: boolean, lease?: string): Error {
    if (isLeaseholdApiError(error) && (error.status === 401 || error.status === 403)) return error;
    if (!isLeaseholdApiError(error)) {
      return new LeaseStoreError(`HTTP store ${what}: ${(error as Error).message}`, { ambiguous: write, cause: error });
    }
    if (error.status === 400 && error.problem?.errors) {
      return new LeaseValidationError("lease record", error.problem.errors);
    }
    // The API cannot read the record either: the same error a local store gives (never overwritten).
    if (lease !== undefined && error.problem?.type.endsWith(":corrupt")) {
      return new LeaseCorruptError(lease, error.problem.errors ?? [{ path: "", message: error.problem.detail }], {
        cause: error,
      });
    }
    const refused = (error.status >= 400 && error.status < 500) || error.problem?.type.endsWith(":over-capacity");
    return new LeaseStoreError(`HTTP store ${what}: ${error.message}`, { ambiguous: write && !refused, cause: error });
  }
}
