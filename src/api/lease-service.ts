/**
 * What the stateless API does with a store: acquire / renew / release with server-stamped
 * times, judged by `renewedAt + leaseMs + maxSkewMs` against this instance's wall clock
 * (DESIGN.md §3), and the raw compare-and-swap the HTTP store uses. A lost race is re-decided
 * on the fresh record (bounded), an ambiguous write is resolved by reading back its writeId.
 */
import type { Clock } from "../clock.js";
import { LeaseConflictError, LeaseCorruptError, LeaseStoreError, LeaseValidationError } from "../errors.js";
import { isAmbiguous, type LeaseRecord, type LeaseStore, newWriteId, type Stored } from "../lease.js";
import type { ApiMetrics } from "./metrics.js";
import { ProblemError } from "./problems.js";
import type { LeaseView, RecordWrite } from "./schemas.js";
import type { WatchHub } from "./watch-hub.js";

const ATTEMPTS = 4;

export function toView(stored: Stored): LeaseView {
  const r = stored.record;
  return {
    name: r.name,
    holder: r.holder,
    term: r.term,
    leaseMs: r.leaseMs,
    acquiredAt: r.acquiredAt,
    renewedAt: r.renewedAt,
    expiresAt: r.renewedAt + r.leaseMs,
    metadata: r.metadata,
    writeId: r.writeId,
    revision: stored.revision,
  };
}

export interface LeaseOutcome {
  leader: boolean;
  stored: Stored;
  created?: boolean;
}

export class LeaseService {
  constructor(
    private readonly store: LeaseStore,
    private readonly clock: Clock,
    readonly maxSkewMs: number,
    private readonly metrics: ApiMetrics,
    private readonly hub: WatchHub,
  ) {}

  /** Free when released, or when no instance could still consider it held (skew bound included). */
  isFree(record: LeaseRecord, wallNow = this.clock.wallNow()): boolean {
    return record.holder === null || wallNow > record.renewedAt + record.leaseMs + this.maxSkewMs;
  }

  async get(name: string): Promise<Stored | null> {
    const stored = await this.call("get", () => this.store.get(name));
    this.hub.publish(name, stored);
    return stored;
  }

  async *list(prefix: string, startAfter: string | undefined, limit: number): AsyncIterable<Stored> {
    if (!this.store.list) throw new ProblemError("not-found", "this store cannot list leases");
    const started = this.clock.now();
    try {
      yield* this.store.list(prefix, startAfter === undefined ? { limit } : { startAfter, limit });
    } catch (error) {
      throw this.storeProblem("list", error);
    } finally {
      this.metrics.storeLatency.observe({ op: "list" }, (this.clock.now() - started) / 1000);
    }
  }

  async acquire(
    name: string,
    req: { holder: string; leaseMs: number; metadata?: Record<string, string> | undefined },
  ): Promise<LeaseOutcome> {
    return this.decide(name, (current, wall) => {
      const r = current?.record;
      if (r && r.holder === req.holder && !this.isFree(r, wall)) {
        return {
          ...r,
          leaseMs: req.leaseMs,
          metadata: req.metadata ?? r.metadata,
          renewedAt: wall,
          writeId: newWriteId(),
        };
      }
      if (r && !this.isFree(r, wall)) return undefined; // held by someone else
      return {
        name,
        holder: req.holder,
        term: (r?.term ?? 0) + 1,
        leaseMs: req.leaseMs,
        acquiredAt: wall,
        renewedAt: wall,
        metadata: req.metadata ?? {},
        writeId: newWriteId(),
      };
    });
  }

  async renew(name: string, req: { holder: string; term: number }): Promise<LeaseOutcome> {
    return this.decide(name, (current, wall) => {
      const r = current?.record;
      if (!r) throw new ProblemError("not-found", `lease "${name}" does not exist: acquire it first`);
      if (r.holder !== req.holder || r.term !== req.term || this.isFree(r, wall)) return undefined;
      return { ...r, renewedAt: wall, writeId: newWriteId() };
    });
  }

  async release(name: string, req: { holder: string; term: number }): Promise<LeaseOutcome> {
    return this.decide(name, (current, wall) => {
      const r = current?.record;
      if (!r) throw new ProblemError("not-found", `lease "${name}" does not exist`);
      // Idempotent: a repeated release of the same term finds it already free.
      if (r.holder === null && r.term === req.term) return "unchanged";
      if (r.holder !== req.holder || r.term !== req.term) return undefined;
      return { ...r, holder: null, renewedAt: wall, writeId: newWriteId() };
    });
  }

  /**
   * The raw CAS of the HTTP store. `renewedAt` (the only time the API's decisions use) is
   * stamped here; `acquiredAt` is the writer's, informational, and refused when in the future.
   */
  async put(name: string, body: RecordWrite & { acquiredAt: number }, expected: string | null): Promise<Stored> {
    const wall = this.clock.wallNow();
    if (body.acquiredAt > wall + this.maxSkewMs) {
      throw new ProblemError("validation", "acquiredAt is in the future of this server's clock", {
        errors: [{ path: "acquiredAt", message: `expected at most ${wall + this.maxSkewMs}` }],
      });
    }
    const next: LeaseRecord = { name, ...body, renewedAt: wall };
    try {
      const stored = await this.call("put", () => this.store.put(next, expected));
      this.hub.publish(name, stored);
      return stored;
    } catch (error) {
      if (error instanceof ProblemError && error.kind === "store-unavailable") {
        const resolved = await this.resolveAmbiguous(name, next.writeId);
        if (resolved) return resolved;
      }
      throw error;
    }
  }

  /**
   * Reads, lets `next` decide the write (or `undefined`: refused, "unchanged": nothing to do),
   * writes with CAS, and on a lost race decides again on the record that won.
   */
  private async decide(
    name: string,
    next: (current: Stored | null, wall: number) => LeaseRecord | undefined | "unchanged",
  ): Promise<LeaseOutcome> {
    let current = await this.get(name);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const record = next(current, this.clock.wallNow());
      if (record === "unchanged") return { leader: false, stored: current! };
      if (record === undefined) {
        throw new ProblemError("conflict", `lease "${name}" is held by another holder or the term has moved on`, {
          lease: toView(current!),
          leader: false,
        });
      }
      try {
        const stored = await this.call("put", () => this.store.put(record, current?.revision ?? null));
        this.hub.publish(name, stored);
        return { leader: record.holder !== null, stored, created: current === null };
      } catch (error) {
        if (error instanceof LeaseConflictError) {
          current = error.current === undefined ? await this.get(name) : error.current;
          continue;
        }
        if (error instanceof ProblemError && error.kind === "store-unavailable") {
          // Not visible (yet): a timed-out write may still land, so report the doubt (503) and let the
          // client repeat the call, which is idempotent for the same holder.
          const resolved = await this.resolveAmbiguous(name, record.writeId);
          if (resolved) return { leader: record.holder !== null, stored: resolved, created: current === null };
          throw error;
        }
        throw error;
      }
    }
    throw new ProblemError("store-unavailable", `lease "${name}" changed ${ATTEMPTS} times while deciding; retry`, {
      retryAfter: 1,
    });
  }

  /** After an ambiguous write: it applied iff the stored record carries its writeId. */
  private async resolveAmbiguous(name: string, writeId: string): Promise<Stored | undefined> {
    const current = await this.get(name);
    return current?.record.writeId === writeId ? current : undefined;
  }

  private async call<T>(op: "get" | "put", fn: () => Promise<T>): Promise<T> {
    const started = this.clock.now();
    try {
      return await fn();
    } catch (error) {
      if (error instanceof LeaseConflictError) {
        this.metrics.conflicts.inc();
        throw error;
      }
      throw this.storeProblem(op, error);
    } finally {
      this.metrics.storeLatency.observe({ op }, (this.clock.now() - started) / 1000);
    }
  }

  private storeProblem(op: string, error: unknown): ProblemError {
    if (error instanceof ProblemError) return error;
    if (error instanceof LeaseValidationError) {
      return new ProblemError("validation", error.message, { errors: error.issues });
    }
    if (error instanceof LeaseCorruptError) return new ProblemError("corrupt", error.message);
    this.metrics.storeErrors.inc({ op, ambiguous: String(isAmbiguous(error)) });
    const detail = error instanceof LeaseStoreError ? error.message : "the store failed";
    return new ProblemError("store-unavailable", `${detail}; the outcome is resolved by reading, retry`, {
      retryAfter: 1,
    });
  }
}
