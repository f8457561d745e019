/**
 * How late this process's event loop is, measured the same way on every runtime: a timer asks to
 * run every `intervalMs`, and how much later than asked it ran is the lateness. A CPU hog, a long
 * synchronous task or more requests than the process can serve all show up here, the way Node's
 * `monitorEventLoopDelay` shows them, but with only `setTimeout` and `performance.now()`.
 *
 * `now()` is the larger of the last tick's lateness and how overdue the next tick is at the moment
 * of asking: when the loop was blocked, the requests that queued behind the block are judged late
 * even if they run before the timer does. The timer does not keep a process alive (unref where the
 * runtime has it). Used by the Node entries for admission (src/api/admission.ts). Runtime-neutral.
 */
export class LatenessProbe {
  private last = 0;
  private due: number | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly intervalMs = 50,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  start(): this {
    if (this.timer === undefined) this.schedule();
    return this;
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.due = undefined;
    this.last = 0;
  }

  /** How late the event loop is now, in ms (0 while stopped). */
  now(): number {
    if (this.due === undefined) return 0;
    return Math.max(this.last, this.clock() - this.due);
  }

  private schedule(): void {
    const due = this.clock() + this.intervalMs;
    this.due = due;
    this.timer = setTimeout(() => {
      this.last = Math.max(0, this.clock() - due);
      this.schedule();
    }, this.intervalMs);
    (this.timer as { unref?: () => void }).unref?.();
  }
}
