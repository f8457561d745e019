/**
 * The lease record (docs/design.md §1) and what a store hands back: types only, and no imports,
 * so every module can name them (the errors among them: a `LeaseConflictError` carries the record
 * that won) without depending on the validation in src/lease.ts, which re-exports them.
 */

/** One lease (docs/design.md §1). A released lease has `holder: null` and keeps its `term`. */
export interface LeaseRecord {
  name: string;
  /** Identity of the leader, or `null` once released. */
  holder: string | null;
  /** Fencing token: +1 each time leadership passes to a holder; never reused, survives release. */
  term: number;
  /** How long the lease is valid after each renewal, as declared by the holder. */
  leaseMs: number;
  /** Wall-clock ms when the current term began (writer's clock). */
  acquiredAt: number;
  /** Wall-clock ms of the write that produced this revision (writer's clock). */
  renewedAt: number;
  metadata: Record<string, string>;
  /** Random id of the write that produced this revision: resolves ambiguous outcomes. */
  writeId: string;
  /** A scheduled job's latest fire (src/schedule/): protocol state, never caller metadata. */
  fire?: FireState | undefined;
}

/**
 * The latest fire of a scheduled job (docs/schedule.md), claimed or settled. It never goes back,
 * and a settled fire is never reopened (src/term-rules.ts), so no fire runs twice.
 */
export interface FireState {
  /** The fire's scheduled instant: wall-clock ms since the epoch. */
  at: number;
  /** False while the fire's run is under way (or its runner vanished); true once it is settled. */
  done: boolean;
}

/** Opaque compare-and-swap token; only the store that issued it understands it. */
export type Revision = string;

export interface Stored {
  record: LeaseRecord;
  revision: Revision;
}
