/**
 * A simulated clock for benchmarks with thousands of timers: the same contract as `ManualClock`
 * (time moves only when told; a sleep resolves at its deadline or at once when its signal aborts),
 * with timers in a binary heap and cancelled ones dropped lazily, so a step costs O(log n) instead
 * of a scan of every timer. After each batch of timers due at one instant it yields once to the
 * event loop, which lets promise-only code (the memory store) run to quiescence.
 */
import type { Clock } from "../../src/clock.js";

interface Timer {
  at: number;
  seq: number;
  resolve: () => void;
  done: boolean;
}

const yieldOnce = () => new Promise<void>((resolve) => setImmediate(resolve));

export class SimClock implements Clock {
  private monotonic = 0;
  private seq = 0;
  private readonly heap: Timer[] = [];

  constructor(private readonly wallStart = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.monotonic;
  }

  wallNow(): number {
    return Math.round(this.wallStart + this.monotonic);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer: Timer = { at: this.monotonic + Math.max(0, ms), seq: this.seq++, resolve, done: false };
      const cancel = () => {
        if (timer.done) return;
        timer.done = true;
        resolve();
      };
      timer.resolve = () => {
        signal?.removeEventListener("abort", cancel);
        resolve();
      };
      signal?.addEventListener("abort", cancel, { once: true });
      if (Number.isFinite(timer.at)) this.push(timer);
    });
  }

  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.monotonic + ms);
  }

  async advanceTo(target: number): Promise<void> {
    await yieldOnce();
    for (;;) {
      const next = this.peek();
      if (!next || next.at > target) break;
      this.monotonic = Math.max(this.monotonic, next.at);
      while (this.peek()?.at === next.at) {
        const t = this.pop()!;
        t.done = true;
        t.resolve();
      }
      await yieldOnce();
    }
    this.monotonic = Math.max(this.monotonic, target);
    await yieldOnce();
  }

  /** The earliest live timer (cancelled ones are dropped on the way). */
  private peek(): Timer | undefined {
    while (this.heap.length > 0 && this.heap[0]!.done) this.pop();
    return this.heap[0];
  }

  private before(a: Timer, b: Timer): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(t: Timer): void {
    const h = this.heap;
    h.push(t);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  private pop(): Timer | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.before(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.before(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}
