/**
 * The downstream system fencing protects: it accepts a write only when its term is at least the
 * highest term it has accepted, and keeps every attempt (accepted or not) for the checker.
 */

export interface FencedWrite {
  /** The candidate instance that wrote. */
  writer: string;
  term: number;
  /** True time the writer sent it, and when it reached the resource. */
  sentAt: number;
  landedAt: number;
  accepted: boolean;
}

export class FencedResource {
  private highest = 0;
  readonly writes: FencedWrite[] = [];

  /** Applies one write as it lands; returns whether it was accepted. */
  land(writer: string, term: number, sentAt: number, landedAt: number): boolean {
    const accepted = term >= this.highest;
    if (accepted) this.highest = term;
    this.writes.push({ writer, term, sentAt, landedAt, accepted });
    return accepted;
  }

  get accepted(): number {
    return this.writes.filter((w) => w.accepted).length;
  }

  get rejected(): number {
    return this.writes.length - this.accepted;
  }
}
