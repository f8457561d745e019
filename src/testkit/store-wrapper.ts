/**
 * A store that wraps another and forwards every capability it has (`list`, `getMany`, `watch`,
 * `close`, `limits`, `checkRevision`), so wrappers used in tests, chaos runs and benchmarks
 * never silently strip one: an elector behind a wrapper takes the push path when the inner store
 * pushes, the API's watch hub batches its re-reads when the inner store does, and an elector is
 * held to the inner store's own limits. Subclasses override `get`/`put` and, to see those calls,
 * `listOf`/`getManyOf`/`watchOf`; a capability is dropped only on purpose (`without`).
 * Runtime-neutral.
 */
import type {
  CallOptions,
  LeaseRecord,
  LeaseStore,
  Listed,
  ListOptions,
  Revision,
  Stored,
  StoreLimits,
} from "../lease.js";

/** Optional capabilities a wrapper may deliberately hide (e.g. a chaos profile without push). */
export type Capability = "list" | "getMany" | "watch" | "limits" | "checkRevision";

export class StoreWrapper implements LeaseStore {
  readonly list?: (prefix: string, options?: ListOptions) => AsyncIterable<Listed>;
  readonly getMany?: (names: readonly string[], options?: CallOptions) => Promise<Array<Stored | null>>;
  readonly watch?: (name: string, signal: AbortSignal) => AsyncIterable<Stored | null>;
  readonly close?: () => Promise<void>;
  readonly limits?: StoreLimits;
  readonly checkRevision?: (revision: Revision) => void;

  constructor(
    readonly inner: LeaseStore,
    options: { without?: Capability[] } = {},
  ) {
    const hidden = new Set(options.without ?? []);
    const { list, getMany, watch, close, limits, checkRevision } = inner;
    if (list && !hidden.has("list")) this.list = (prefix, o) => this.listOf(prefix, o);
    if (getMany && !hidden.has("getMany")) this.getMany = (names, o) => this.getManyOf(names, o);
    if (watch && !hidden.has("watch")) this.watch = (name, signal) => this.watchOf(name, signal);
    if (close) this.close = () => close.call(inner);
    if (limits && !hidden.has("limits")) this.limits = limits;
    if (checkRevision && !hidden.has("checkRevision")) {
      this.checkRevision = (revision) => checkRevision.call(inner, revision);
    }
  }

  get(name: string, options?: CallOptions): Promise<Stored | null> {
    return this.inner.get(name, options);
  }

  put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    return this.inner.put(next, expected, options);
  }

  /** Called for `list` (only when the inner store lists). */
  protected listOf(prefix: string, options?: ListOptions): AsyncIterable<Listed> {
    return (this.inner.list as NonNullable<LeaseStore["list"]>).call(this.inner, prefix, options);
  }

  /** Called for `getMany` (only when the inner store reads in batches). */
  protected getManyOf(names: readonly string[], options?: CallOptions): Promise<Array<Stored | null>> {
    return (this.inner.getMany as NonNullable<LeaseStore["getMany"]>).call(this.inner, names, options);
  }

  /** Called for `watch` (only when the inner store pushes). */
  protected watchOf(name: string, signal: AbortSignal): AsyncIterable<Stored | null> {
    return (this.inner.watch as NonNullable<LeaseStore["watch"]>).call(this.inner, name, signal);
  }
}
