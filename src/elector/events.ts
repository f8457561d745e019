/**
 * A small typed event emitter for the elector's events. A listener that throws is isolated: a
 * bug in user code must not break the election loop. Runtime-neutral (no Node EventEmitter).
 */
export type Listener<T> = (event: T) => void;

export class Emitter<Events extends object> {
  private readonly listeners: { [K in keyof Events]?: Set<Listener<Events[K]>> } = {};

  /** Subscribes to an event; returns the unsubscribe function. */
  on<K extends keyof Events>(type: K, listener: Listener<Events[K]>): () => void {
    let set = this.listeners[type];
    if (!set) {
      set = new Set();
      this.listeners[type] = set;
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  emit<K extends keyof Events>(type: K, event: Events[K]): void {
    for (const listener of this.listeners[type] ?? []) {
      try {
        listener(event);
      } catch {
        // A listener's bug must not break the election loop.
      }
    }
  }
}

/** Who leads a lease, as a candidate's `leader` event tells it. */
export interface LeaderSeen {
  holder: string | null;
  term: number;
}

/**
 * The `leader` event of both candidates (the Elector and the bound elector): told each record
 * seen, it calls `emit` only when who leads (holder, term) changed since the last one told.
 */
export class LeaderNotice {
  private last: LeaderSeen | undefined;

  constructor(private readonly emit: (seen: LeaderSeen) => void) {}

  note(stored: { record: { holder: string | null; term: number } } | null): void {
    const holder = stored?.record.holder ?? null;
    const term = stored?.record.term ?? 0;
    if (this.last?.holder === holder && this.last.term === term) return;
    this.last = { holder, term };
    this.emit({ holder, term });
  }
}
