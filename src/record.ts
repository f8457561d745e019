/**
 * The lease record (docs/design.md §1) and what a store hands back: types only, and no imports,
 * so every module can name them (the errors among them: a `LeaseConflictError` carries the record
 * that won) without depending on the validation in src/lease.ts, which re-exports them.
 */

/** A process session's tenure: the session record's name and the term it held (docs/design.md §4). */
export interface SessionRef {
  name: string;
  term: number;
}

/** A candidate waiting for a bound lease: its holder identity and the session it would hold it under. */
export interface Successor {
  holder: string;
  session: SessionRef;
}

/**
 * Instance proofs of an API that keeps its leases in another API (through the HTTP store): that
 * API's own `holderDigest` and `successorDigest`, which the API behind stores and shows back but
 * never judges by (docs/design.md §1 "Protocol fields").
 */
export interface UpstreamProof {
  holderDigest?: string;
  successorDigest?: string;
}

/**
 * One lease (docs/design.md §1). A released lease has `holder: null` and keeps its `term`.
 *
 * The optional fields after `writeId` are protocol state (docs/design.md §1 "Protocol fields"):
 * typed, validated, and written only by the code that owns them, never by a caller through
 * `metadata`.
 */
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
  /** A bound lease: the process session tenure it rides on (held records only; src/bound/). */
  session?: SessionRef;
  /** A bound lease: the candidate registered to be handed it next (held records only). */
  successor?: Successor;
  /** The API's proof of the holding process: the SHA-256 digest of its instance (src/api/instance.ts). */
  holderDigest?: string;
  /** The API's proof of the process that registered `successor`. */
  successorDigest?: string;
  /** Another API's proofs, kept for it when it stores its leases here through the HTTP store. */
  upstream?: UpstreamProof;
  /** A scheduled job's latest fire (src/schedule/): protocol state, never caller metadata. */
  fire?: FireState | undefined;
  /**
   * A process session record: how many leases bound to this session term it has released or
   * handed over while staying open (src/bound/, docs/design.md §4 "Reading a bound lease"). Its
   * owner writes it; followers read their lease when it changes, and no verdict depends on it.
   */
  releases?: number | undefined;
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
