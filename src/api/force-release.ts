/**
 * An operator's way out of a record the server cannot read or judge (docs/security.md, "One bad
 * record never fails a page"): `POST /v1/leases/{name}/force-release`, what `leasehold release
 * --force NAME` sends, with a token that has the verb `force`. The record is replaced, by
 * compare-and-swap on the revision the store reported for it, with a released one:
 *
 * - a record that reads but cannot be judged (what it names is not a name, or is unreadable)
 *   keeps its term, as any release does, and loses its metadata, where the fault was;
 * - a record the store cannot read has no term anyone can trust: the operator names the term the
 *   released record carries (`term`), at least the highest term anything downstream fenced with.
 *
 * A record that reads and can be judged is refused (409 `not-corrupt`): its holder releases it, or
 * it expires. Every clearing is logged with the token's name and what was wrong. Runtime-neutral.
 */
import type { Clock } from "../clock.js";
import { CasWriter } from "../elector/cas.js";
import { isLeaseCorruptError, type LeaseCorruptError } from "../errors.js";
import { MAX_CREATED_TERM } from "../http/schemas.js";
import { type LeaseRecord, type LeaseStore, MIN_LEASE_MS, newWriteId, releasedRecord, type Stored } from "../lease.js";
import { type LeaseViews, storeProblem } from "./lease-views.js";
import type { ApiLogger } from "./log.js";
import { ProblemError } from "./problems.js";

export interface ForceReleaseOptions {
  /** The API's (metered) store. */
  store: LeaseStore;
  views: LeaseViews;
  clock: Clock;
  /** Every record written, for the watch streams (WatchHub.publish). */
  publish: (name: string, stored: Stored) => void;
  log: ApiLogger;
}

/** What was cleared: the released record, and what was wrong with the one it replaced. */
export interface Cleared {
  stored: Stored;
  why: string;
}

export class ForceRelease {
  constructor(private readonly o: ForceReleaseOptions) {}

  /** Replaces `name`'s unreadable or unjudgeable record with a released one, for the token named `by`. */
  async clear(name: string, term: number | undefined, by: string): Promise<Cleared> {
    const { store, clock } = this.o;
    let current: Stored | null = null;
    let corrupt: LeaseCorruptError | undefined;
    try {
      current = await store.get(name);
    } catch (error) {
      if (!isLeaseCorruptError(error)) throw storeProblem("get", error);
      corrupt = error;
    }
    const wall = clock.wallNow();
    const { record, revision, why } = corrupt
      ? unreadableRecord(name, corrupt, term, wall)
      : await this.unjudgeableRecord(name, current, term, wall);
    const outcome = await new CasWriter({ store, name, clock })
      .writeSettled(record, revision)
      .catch((error: unknown) => {
        throw storeProblem("put", error);
      });
    if (outcome.kind === "lost") {
      throw new ProblemError(
        "precondition-failed",
        `lease "${name}" changed while it was being cleared: read it again (nothing was written)`,
      );
    }
    this.o.publish(name, outcome.stored);
    this.o.log.info("lease force-released", { lease: name, term: record.term, by, why });
    return { stored: outcome.stored, why };
  }

  /** A record that reads: cleared only when the server cannot judge it; it keeps its term. */
  private async unjudgeableRecord(
    name: string,
    current: Stored | null,
    term: number | undefined,
    wall: number,
  ): Promise<{ record: LeaseRecord; revision: string; why: string }> {
    if (!current) throw new ProblemError("not-found", `lease "${name}" does not exist`);
    const row = await this.o.views.row(current);
    if ("lease" in row) {
      throw new ProblemError(
        "not-corrupt",
        `lease "${name}" reads and is judged as every other: nothing to clear (its holder releases it, or it expires)`,
        { lease: row.lease },
      );
    }
    const r = current.record;
    if (term !== undefined && term !== r.term) {
      throw new ProblemError("validation", `lease "${name}" is at term ${r.term}: a forced release keeps it`, {
        errors: [{ path: "term", message: `expected ${r.term} (the record's own term) or nothing` }],
      });
    }
    // Released by the one release builder (its session and successor dropped), without metadata.
    const record = releasedRecord(r, Math.max(wall, r.renewedAt), {});
    return { record, revision: current.revision, why: row.unreadable.detail };
  }
}

/** A record the store cannot read: replaced at the revision it reported, at the term the operator names. */
function unreadableRecord(
  name: string,
  corrupt: LeaseCorruptError,
  term: number | undefined,
  wall: number,
): { record: LeaseRecord; revision: string; why: string } {
  if (corrupt.revision === undefined) {
    throw new ProblemError(
      "conflict",
      `lease "${name}" is unreadable and its store could not read a revision for it either, so no compare-and-swap can replace it: remove it with the store's own tools (${corrupt.message})`,
    );
  }
  if (term === undefined) {
    throw new ProblemError(
      "validation",
      `lease "${name}" is unreadable, so its term cannot be read: send the term the released record is to carry, at least the highest term anything downstream fenced with under this name (0 if nothing fences with it)`,
      { errors: [{ path: "term", message: "expected the term for the released record" }] },
    );
  }
  if (term > MAX_CREATED_TERM) {
    throw new ProblemError("validation", `a cleared record carries at most term ${MAX_CREATED_TERM}`, {
      errors: [{ path: "term", message: `expected at most ${MAX_CREATED_TERM}` }],
    });
  }
  return { record: clearedRecord(name, term, wall), revision: corrupt.revision, why: corrupt.message };
}

/** What replaces a record nobody can read: released, at the term the operator named, nothing else kept. */
export function clearedRecord(name: string, term: number, wall: number): LeaseRecord {
  return {
    name,
    holder: null,
    term,
    leaseMs: MIN_LEASE_MS,
    acquiredAt: wall,
    renewedAt: wall,
    metadata: {},
    writeId: newWriteId(),
  };
}
