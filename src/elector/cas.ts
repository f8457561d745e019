/**
 * The one write path (docs/design.md §4): "write with compare-and-swap and tell me what happened".
 * The elector, the API service and `leasehold release` all write through a `CasWriter`; stores
 * only report (a conflict, with the current record when they have it, or an ambiguous failure)
 * and never decide whose write is current.
 *
 * The ownership rule, the only place it is decided: a write applied when the store accepted it,
 * or when the record the store holds carries its `writeId` or the `writeId` of one of this
 * writer's earlier writes whose outcome was unknown ("pending"). `writeId`s are random per
 * write, so a match is proof, never a guess. This covers a write retried by an SDK after its
 * first attempt applied (the retry fails its own condition: a conflict that carries our
 * `writeId`), a re-sent write, and a timed-out write that landed after all.
 *
 * Runtime-neutral: no Node-only API.
 */
import type { Clock } from "../clock.js";
import { isAmbiguous, isLeaseConflictError, LeaseStoreError } from "../errors.js";
import type { LeaseRecord, LeaseStore, Revision, Stored } from "../lease.js";

export type WriteOutcome =
  /**
   * The store holds what one of our writes produced. `sentAt` is when that write was sent
   * (monotonic): this write's, or an earlier pending one's when the conflict showed that one.
   * `resent` is true when it was learnt from a conflict or read rather than the store's answer.
   */
  | { kind: "applied"; stored: Stored; sentAt: number; resent: boolean }
  /** Another writer's record is current: `current` when known (`null`: the lease does not exist). */
  | { kind: "lost"; current: Stored | null | undefined }
  /** The call failed. `ambiguous`: it may still have applied; it is remembered as pending. */
  | { kind: "unknown"; error: unknown; ambiguous: boolean };

export interface CasWriterOptions {
  store: LeaseStore;
  /** The lease this writer writes (used in timeout messages). */
  name: string;
  clock: Clock;
  /** A store call slower than this is aborted and counts as ambiguous. Default: no limit. */
  callTimeoutMs?: number;
}

export interface CallLimit {
  /** A tighter limit for this call (e.g. what is left of a leader's safe window). */
  timeoutMs?: number;
}

/** Only the latest few unknown writes can still be the current record: the set stays bounded. */
const MAX_PENDING = 16;

export class CasWriter {
  private readonly store: LeaseStore;
  private readonly name: string;
  private readonly clock: Clock;
  private readonly callTimeoutMs: number;
  /** Our writes whose outcome is unknown, with the instant each was sent. */
  private readonly pending = new Map<string, number>();

  constructor(options: CasWriterOptions) {
    this.store = options.store;
    this.name = options.name;
    this.clock = options.clock;
    this.callTimeoutMs = options.callTimeoutMs ?? Number.POSITIVE_INFINITY;
  }

  /** True while some earlier write's outcome is still unknown. */
  get hasPending(): boolean {
    return this.pending.size > 0;
  }

  /**
   * One conditional write (`expected: null` = create if absent), classified. A conflict without
   * the current record costs one read, so the ownership rule can be applied to it.
   */
  async write(next: LeaseRecord, expected: Revision | null, limit: CallLimit = {}): Promise<WriteOutcome> {
    const sentAt = this.clock.now();
    try {
      const stored = await this.call((signal) => this.store.put(next, expected, { signal }), limit, "write");
      this.pending.clear(); // a newer write is current: no earlier one can be
      return { kind: "applied", stored, sentAt, resent: false };
    } catch (error) {
      if (isLeaseConflictError(error)) {
        let current = error.current;
        if (current === undefined) current = await this.read(limit).catch(() => undefined);
        const mine = this.recognise(current, next.writeId, sentAt);
        if (mine) return mine;
        return { kind: "lost", current };
      }
      const ambiguous = isAmbiguous(error);
      if (ambiguous) this.remember(next.writeId, sentAt);
      return { kind: "unknown", error, ambiguous };
    }
  }

  /**
   * `write` for callers that cannot wait for a later read (a request, a command): an ambiguous
   * outcome is settled at once by one read, and an outcome still unknown is thrown.
   */
  async writeSettled(
    next: LeaseRecord,
    expected: Revision | null,
    limit: CallLimit = {},
  ): Promise<Exclude<WriteOutcome, { kind: "unknown" }>> {
    const outcome = await this.write(next, expected, limit);
    if (outcome.kind !== "unknown") return outcome;
    const settled = outcome.ambiguous ? await this.resolve(limit).catch(() => undefined) : undefined;
    if (settled) return settled;
    throw outcome.error;
  }

  /** Strongly consistent read, under the same time limit as writes. Throws what the store threw. */
  read(limit: CallLimit = {}): Promise<Stored | null> {
    return this.call((signal) => this.store.get(this.name, { signal }), limit, "read");
  }

  /**
   * The ownership rule. `stored` carries the `writeId` of this write (given) or of a pending
   * one: that write applied and `stored` is what it produced. Otherwise `undefined`.
   */
  recognise(
    stored: Stored | null | undefined,
    writeId?: string,
    sentAt?: number,
  ): Extract<WriteOutcome, { kind: "applied" }> | undefined {
    if (!stored) return undefined;
    const id = stored.record.writeId;
    const at = id === writeId ? sentAt : this.pending.get(id);
    if (at === undefined) return undefined;
    this.pending.clear();
    return { kind: "applied", stored, sentAt: at, resent: true };
  }

  /** After an ambiguous write: one read settles it when the write landed; `undefined` otherwise. */
  async resolve(limit: CallLimit = {}): Promise<Extract<WriteOutcome, { kind: "applied" }> | undefined> {
    if (this.pending.size === 0) return undefined;
    return this.recognise(await this.read(limit));
  }

  /** Forgets unknown writes (a term that ended: its late landings must not count as ours). */
  forget(): void {
    this.pending.clear();
  }

  private remember(writeId: string, sentAt: number): void {
    this.pending.set(writeId, sentAt);
    for (const oldest of this.pending.keys()) {
      if (this.pending.size <= MAX_PENDING) break;
      this.pending.delete(oldest);
    }
  }

  /**
   * Races a store call against the clock; on timeout the call is aborted. A write that timed out
   * may still apply (ambiguous); a read changes nothing, so it never is.
   */
  private async call<T>(fn: (signal: AbortSignal) => Promise<T>, limit: CallLimit, kind: "read" | "write"): Promise<T> {
    const timeoutMs = Math.max(0, Math.min(limit.timeoutMs ?? Number.POSITIVE_INFINITY, this.callTimeoutMs));
    if (timeoutMs === Number.POSITIVE_INFINITY) return fn(new AbortController().signal);
    const abort = new AbortController();
    const timer = new AbortController();
    const pending = fn(abort.signal);
    pending.catch(() => undefined);
    const expired = this.clock.sleep(timeoutMs, timer.signal).then(() => {
      if (timer.signal.aborted) return undefined as never;
      abort.abort();
      throw new LeaseStoreError(`store ${kind} for lease "${this.name}" timed out after ${Math.round(timeoutMs)} ms`, {
        ambiguous: kind === "write",
      });
    });
    try {
      return await Promise.race([pending, expired]);
    } finally {
      timer.abort();
    }
  }
}
