/**
 * What the stateless API does with a store: acquire / renew / release with server-stamped
 * times, judged by `renewedAt + leaseMs + maxSkewMs` against this instance's wall clock
 * (docs/design.md §3), and the raw compare-and-swap the HTTP store uses. Every write goes through
 * the one write path (src/elector/cas.ts) and is checked against the term rules
 * (src/term-rules.ts) whatever the caller's token allows. A lost race is re-decided on the fresh
 * record (bounded); an ambiguous write is settled by reading back its writeId.
 */
import type { Clock } from "../clock.js";
import { CasWriter, type WriteOutcome } from "../elector/cas.js";
import { isAmbiguous, LeaseConflictError, LeaseCorruptError, LeaseValidationError } from "../errors.js";
import type { LeaseView, RecordWrite } from "../http/schemas.js";
import { type LeaseRecord, type LeaseStore, newWriteId, type Stored } from "../lease.js";
import { checkTermRules } from "../term-rules.js";
import { type ApiLogger, failureFields, silentLogger } from "./log.js";
import type { ApiMetrics } from "./metrics.js";
import { ProblemError } from "./problems.js";
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
  private readonly store: LeaseStore;

  constructor(
    store: LeaseStore,
    private readonly clock: Clock,
    readonly maxSkewMs: number,
    metrics: ApiMetrics,
    private readonly hub: WatchHub,
    private readonly log: ApiLogger = silentLogger,
  ) {
    this.store = meteredStore(store, clock, metrics, log);
  }

  /** Free when released, or when no instance could still consider it held (skew bound included). */
  isFree(record: LeaseRecord, wallNow = this.clock.wallNow()): boolean {
    return record.holder === null || wallNow > record.renewedAt + record.leaseMs + this.maxSkewMs;
  }

  async get(name: string): Promise<Stored | null> {
    let stored: Stored | null;
    try {
      stored = await this.store.get(name);
    } catch (error) {
      throw storeProblem("get", error);
    }
    this.hub.publish(name, stored);
    return stored;
  }

  async *list(prefix: string, startAfter: string | undefined, limit: number): AsyncIterable<Stored> {
    if (!this.store.list) throw new ProblemError("not-found", "this store cannot list leases");
    try {
      yield* this.store.list(prefix, startAfter === undefined ? { limit } : { startAfter, limit });
    } catch (error) {
      throw storeProblem("list", error);
    }
  }

  /** Every record under `prefix`, in name order (a sharded group's members or buckets). */
  async listAll(prefix: string): Promise<Stored[]> {
    if (!this.store.list) throw new ProblemError("not-found", "this store cannot list leases");
    const out: Stored[] = [];
    try {
      for await (const stored of this.store.list(prefix)) out.push(stored);
    } catch (error) {
      throw storeProblem("list", error);
    }
    return out;
  }

  /**
   * A compare-and-swap decided elsewhere (the sharding routes): checked against the term rules,
   * then written through the write path like every other write of this service.
   */
  async writeChecked(
    name: string,
    next: LeaseRecord,
    current: Stored | null,
  ): Promise<Exclude<WriteOutcome, { kind: "unknown" }>> {
    enforceTermRules(name, current, next);
    return this.write(name, next, current);
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
   * The record is read first: a stale revision is answered 412 with the current record, and a
   * write that breaks a term rule 409, before anything is written.
   */
  async put(name: string, body: RecordWrite & { acquiredAt: number }, expected: string | null): Promise<Stored> {
    const wall = this.clock.wallNow();
    if (body.acquiredAt > wall + this.maxSkewMs) {
      throw new ProblemError("validation", "acquiredAt is in the future of this server's clock", {
        errors: [{ path: "acquiredAt", message: `expected at most ${wall + this.maxSkewMs}` }],
      });
    }
    const next: LeaseRecord = { name, ...body, renewedAt: wall };
    const current = await this.get(name);
    if ((current?.revision ?? null) !== expected) throw notAtRevision(name, current);
    enforceTermRules(name, current, next);
    const outcome = await this.write(name, next, current);
    if (outcome.kind === "lost") throw notAtRevision(name, outcome.current);
    return outcome.stored;
  }

  /** Throws a 400 naming `header` when `revision` cannot be one this store issued. */
  checkRevision(header: string, revision: string): void {
    try {
      this.store.checkRevision?.(revision);
    } catch (error) {
      if (!(error instanceof LeaseValidationError)) throw error;
      throw new ProblemError("validation", `${header} names no revision this server could have issued`, {
        errors: error.issues.map((i) => ({ path: header, message: i.message })),
      });
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
      enforceTermRules(name, current, record);
      const outcome = await this.write(name, record, current);
      if (outcome.kind === "applied") {
        return { leader: outcome.stored.record.holder !== null, stored: outcome.stored, created: current === null };
      }
      current = outcome.current === undefined ? await this.get(name) : outcome.current;
      if (current) this.hub.publish(name, current);
    }
    throw new ProblemError("store-unavailable", `lease "${name}" changed ${ATTEMPTS} times while deciding; retry`, {
      retryAfter: 1,
    });
  }

  /**
   * One write through the write path: applied (published to watchers), or lost; an unknown
   * outcome is settled by one read when the write landed, and is a 503 otherwise (the client
   * repeats the call, which is idempotent for the same holder).
   */
  private async write(
    name: string,
    next: LeaseRecord,
    current: Stored | null,
  ): Promise<Exclude<WriteOutcome, { kind: "unknown" }>> {
    const writer = new CasWriter({ store: this.store, name, clock: this.clock });
    const outcome = await writer.writeSettled(next, current?.revision ?? null).catch((error: unknown) => {
      throw storeProblem("put", error);
    });
    if (outcome.kind === "applied") {
      this.hub.publish(name, outcome.stored);
      const from = current?.record.holder ?? null;
      const to = outcome.stored.record.holder;
      if (from !== to || outcome.stored.record.term !== current?.record.term) {
        this.log.info("lease holder changed", { lease: name, from, to, term: outcome.stored.record.term });
      }
    }
    return outcome;
  }
}

function notAtRevision(name: string, current: Stored | null | undefined): ProblemError {
  return new ProblemError("precondition-failed", `lease "${name}" is not at that revision`, {
    ...(current ? { lease: toView(current) } : {}),
  });
}

/** The server's own check of every write, whatever the token: see src/term-rules.ts. */
function enforceTermRules(name: string, current: Stored | null, next: LeaseRecord): void {
  const violation = checkTermRules(current?.record ?? null, next);
  if (!violation) return;
  throw new ProblemError("term-rule", `lease "${name}": ${violation.message}; nothing was written`, {
    rule: violation.rule,
    ...(current ? { lease: toView(current) } : {}),
  });
}

/**
 * A store failure as a problem. The detail never carries the backend's own message: it can name
 * files, buckets, endpoints or SDK internals that are not the client's business.
 */
function storeProblem(op: string, error: unknown): ProblemError {
  if (error instanceof ProblemError) return error;
  if (error instanceof LeaseValidationError) {
    return new ProblemError("validation", error.message, { errors: error.issues });
  }
  if (error instanceof LeaseCorruptError) return new ProblemError("corrupt", error.message);
  const outcome = isAmbiguous(error) ? "; a write may or may not have applied, and is settled by reading" : "";
  return new ProblemError("store-unavailable", `the store failed during ${op}${outcome}; retry`, { retryAfter: 1 });
}

/** The store, timed and counted for /metrics: latency per op, conflicts, and failures. */
function meteredStore(store: LeaseStore, clock: Clock, metrics: ApiMetrics, log: ApiLogger): LeaseStore {
  const timed = async <T>(op: "get" | "put" | "list", fn: () => Promise<T>): Promise<T> => {
    const started = clock.now();
    try {
      return await fn();
    } catch (error) {
      if (error instanceof LeaseConflictError) metrics.conflicts.inc();
      else if (error instanceof LeaseCorruptError) {
        log.error("lease record corrupt", { op, lease: error.lease });
      } else if (!(error instanceof LeaseValidationError)) {
        metrics.storeErrors.inc({ op, ambiguous: String(isAmbiguous(error)) });
        log.error("store call failed", { op, ...failureFields(error) });
      }
      throw error;
    } finally {
      metrics.storeLatency.observe({ op }, (clock.now() - started) / 1000);
    }
  };
  const metered: LeaseStore = {
    get: (name, options) => timed("get", () => store.get(name, options)),
    put: (next, expected, options) => timed("put", () => store.put(next, expected, options)),
  };
  const list = store.list;
  if (list) {
    metered.list = (prefix, options) => {
      const started = clock.now();
      return (async function* () {
        try {
          yield* list.call(store, prefix, options);
        } catch (error) {
          if (!(error instanceof LeaseValidationError || error instanceof LeaseCorruptError)) {
            metrics.storeErrors.inc({ op: "list", ambiguous: "false" });
            log.error("store call failed", { op: "list", ...failureFields(error) });
          }
          throw error;
        } finally {
          metrics.storeLatency.observe({ op: "list" }, (clock.now() - started) / 1000);
        }
      })();
    };
  }
  const checkRevision = store.checkRevision;
  if (checkRevision) metered.checkRevision = (revision) => checkRevision.call(store, revision);
  return metered;
}
