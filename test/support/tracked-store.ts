/**
 * Wraps a store to count its calls and to know when none is in flight, so a manual-clock test
 * can let real I/O (dynalite, fake-gcs-server, HTTP) finish before moving time on.
 */
import type { CallOptions, LeaseRecord, LeaseStore, ListOptions, Revision, Stored } from "../../src/lease.js";

export interface CallCounts {
  get: number;
  put: number;
  list: number;
}

export class TrackedStore implements LeaseStore {
  readonly counts: CallCounts = { get: 0, put: 0, list: 0 };
  private readonly inflight = new Set<Promise<unknown>>();
  readonly list?: (prefix: string, options?: ListOptions) => AsyncIterable<Stored>;

  constructor(readonly inner: LeaseStore) {
    if (inner.list) {
      const list = inner.list.bind(inner);
      this.list = (prefix, options) => {
        this.counts.list++;
        return list(prefix, options);
      };
    }
  }

  get(name: string, options?: CallOptions): Promise<Stored | null> {
    this.counts.get++;
    return this.track(this.inner.get(name, options));
  }

  put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    this.counts.put++;
    return this.track(this.inner.put(next, expected, options));
  }

  resetCounts(): void {
    this.counts.get = 0;
    this.counts.put = 0;
    this.counts.list = 0;
  }

  /** Resolves once no call has been in flight across a few turns of the event loop. */
  async settle(): Promise<void> {
    for (let quiet = 0; quiet < 3; ) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (this.inflight.size === 0) {
        quiet++;
        continue;
      }
      quiet = 0;
      await Promise.allSettled([...this.inflight]);
    }
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    const done = () => this.inflight.delete(p);
    p.then(done, done);
    return p;
  }
}
