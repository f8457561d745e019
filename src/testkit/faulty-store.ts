/**
 * Store wrappers that inject faults per candidate: hangs, errors before the write applies, and
 * errors after it applied (the ambiguous case a lost response produces).
 */

import type { Clock } from "../clock.js";
import { LeaseStoreError } from "../errors.js";
import type { CallOptions, LeaseRecord, LeaseStore, Revision, Stored } from "../lease.js";
import { StoreWrapper } from "./store-wrapper.js";

export type PutFault = "none" | "hang" | "fail-before" | "fail-after" | "ambiguous-before";

export class FaultyStore extends StoreWrapper {
  /** Applied to the next put calls, one fault each, then "none". */
  private readonly putFaults: PutFault[] = [];
  /** While true every call hangs (never settles unless aborted). */
  hang = false;
  readonly hung: Array<() => void> = [];

  /** Added before each call reaches the store, on `clock` (manual in tests). */
  delayMs = 0;

  constructor(
    inner: LeaseStore,
    private readonly clock?: Clock,
  ) {
    super(inner);
  }

  failNextPut(...faults: PutFault[]): void {
    this.putFaults.push(...faults);
  }

  override async get(name: string, options?: CallOptions): Promise<Stored | null> {
    if (this.hang) return this.hangUntilAborted(options);
    await this.delay();
    return this.inner.get(name, options);
  }

  override async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    if (this.hang) return this.hangUntilAborted(options);
    await this.delay();
    const fault = this.putFaults.shift() ?? "none";
    switch (fault) {
      case "hang":
        return this.hangUntilAborted(options);
      case "fail-before":
        throw new LeaseStoreError("injected: rejected before apply", { ambiguous: false });
      case "ambiguous-before":
        throw new LeaseStoreError("injected: timeout, write never sent", { ambiguous: true });
      case "fail-after":
        await this.inner.put(next, expected, options);
        throw new LeaseStoreError("injected: response lost after apply", { ambiguous: true });
      default:
        return this.inner.put(next, expected, options);
    }
  }

  private async delay(): Promise<void> {
    if (this.delayMs > 0 && this.clock) await this.clock.sleep(this.delayMs);
  }

  private hangUntilAborted<T>(options?: CallOptions): Promise<T> {
    return new Promise<T>((_, reject) => {
      const abort = () => reject(new LeaseStoreError("injected hang aborted", { ambiguous: true }));
      if (options?.signal?.aborted) return abort();
      options?.signal?.addEventListener("abort", abort, { once: true });
      this.hung.push(abort);
    });
  }
}
