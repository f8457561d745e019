/**
 * In-instance fan-out of lease changes to watch streams. Every write this instance makes and
 * every record it reads is published; each stream drops what it has already sent (same
 * revision). A stream also polls the store (or uses the store's own push, where it has one) so
 * changes made by other instances reach it within the poll interval.
 */
import type { Stored } from "../lease.js";

type Subscriber = (stored: Stored | null) => void;

export class WatchHub {
  private readonly subscribers = new Map<string, Set<Subscriber>>();

  publish(name: string, stored: Stored | null): void {
    for (const s of this.subscribers.get(name) ?? []) s(stored);
  }

  subscribe(name: string, subscriber: Subscriber): () => void {
    let subs = this.subscribers.get(name);
    if (!subs) {
      subs = new Set();
      this.subscribers.set(name, subs);
    }
    subs.add(subscriber);
    return () => {
      subs.delete(subscriber);
      if (subs.size === 0) this.subscribers.delete(name);
    };
  }
}
