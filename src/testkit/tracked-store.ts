/**
 * Wraps a store to count its calls and to know when none is in flight, so a manual-clock test
 * can let real I/O (dynalite, fake-gcs-server, HTTP) finish before moving time on.
 */
import type { CallOptions, LeaseRecord, Listed, ListOptions, Revision, Stored } from "../lease.js";
import { StoreWrapper } from "./store-wrapper.js";

export interface CallCounts {
  get: number;
  put: number;
  list: number;
  /** Batch reads (`getMany` calls), each one request where the store batches. */
  getMany: number;
}

export class TrackedStore extends StoreWrapper {
  readonly counts: CallCounts = { get: 0, put: 0, list: 0, getMany: 0 };
  /** Every record a put wrote (the store accepted it), in order. */
  readonly written: LeaseRecord[] = [];
  private readonly inflight = new Set<Promise<unknown>>();

  override get(name: string, options?: CallOptions): Promise<Stored | null> {
    this.counts.get++;
    return this.track(super.get(name, options));
  }

  override put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    this.counts.put++;
    return this.track(
      super.put(next, expected, options).then((stored) => {
        this.written.push(stored.record);
        return stored;
      }),
    );
  }

  /** Each page the listing waits for counts as in flight (a store may list by several calls). */
  protected override listOf(prefix: string, options?: ListOptions): AsyncIterable<Listed> {
    this.counts.list++;
    const inner = super.listOf(prefix, options);
    return {
      [Symbol.asyncIterator]: () => {
        const it = inner[Symbol.asyncIterator]();
        return {
          next: () => this.track(it.next()),
          return: (value?: unknown) =>
            it.return ? this.track(it.return(value)) : Promise.resolve({ done: true as const, value: undefined }),
        };
      },
    };
  }

  protected override getManyOf(names: readonly string[], options?: CallOptions): Promise<Array<Stored | null>> {
    this.counts.getMany++;
    return this.track(super.getManyOf(names, options));
  }

  resetCounts(): void {
    this.counts.get = 0;
    this.counts.put = 0;
    this.counts.list = 0;
    this.counts.getMany = 0;
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
