/**
 * Network and store faults for the chaos scenarios. One `Network` per scenario sits between every
 * candidate and the one real store (memory or SQLite); each candidate talks to it through its own
 * `ChaosStore`, whose answers reach the candidate only through its process gate (process.ts).
 *
 * Per request, drawn from the scenario's seeded PRNG:
 * - latency on the true clock each way, with a tail (long enough to outlive the caller's timeout,
 *   so the write lands after its sender gave up on it);
 * - a lost request (hangs, never applied), an error before apply (plain or ambiguous), an error
 *   after apply (ambiguous: it did apply), a lost response (applied, then hangs);
 * - reordering: a put is held back and applied right after a later put from another candidate
 *   reaches the store (or after a bounded hold);
 * - partitions (sharded scenarios): while a process is cut off from the store, its requests are
 *   refused or lost and answers to it are lost, so a write that reached the store before the cut
 *   applies but its sender never hears of it.
 */
import type { ManualClock } from "../../src/clock.js";
import { LeaseStoreError } from "../../src/errors.js";
import type { CallOptions, LeaseRecord, LeaseStore, Listed, ListOptions, Revision, Stored } from "../../src/lease.js";
import { StoreWrapper } from "../../src/testkit/store-wrapper.js";
import type { Prng } from "./prng.js";
import type { SimProcess } from "./process.js";

/** Probability of each fault per request, and the latency shape. */
export interface FaultProfile {
  /** Upper bound of the ordinary one-way latency (uniform from 0). */
  baseLatencyMs: number;
  tailP: number;
  tailMs: [number, number];
  lostRequestP: number;
  failBeforeP: number;
  ambiguousBeforeP: number;
  failAfterP: number;
  lostResponseP: number;
  reorderP: number;
  /** Longest a reordered put waits for another candidate's put before it is applied anyway. */
  maxHoldMs: number;
  getFailP: number;
  getHangP: number;
  /** Expose the backend's push capability (memory only), itself delayed and gated. */
  watch: boolean;
}

export const NO_FAULTS: FaultProfile = {
  baseLatencyMs: 0,
  tailP: 0,
  tailMs: [0, 0],
  lostRequestP: 0,
  failBeforeP: 0,
  ambiguousBeforeP: 0,
  failAfterP: 0,
  lostResponseP: 0,
  reorderP: 0,
  maxHoldMs: 0,
  getFailP: 0,
  getHangP: 0,
  watch: false,
};

export type NetworkFault =
  | "tail-latency"
  | "lost-request"
  | "fail-before"
  | "ambiguous-before"
  | "fail-after"
  | "lost-response"
  | "reorder"
  | "get-fail"
  | "get-hang";

type PutFault = Exclude<NetworkFault, "tail-latency" | "get-fail" | "get-hang"> | "none";

/** A put the store applied, in the order it applied them: the ground truth for "one holder per term". */
export interface AppliedPut {
  at: number;
  /** The record written. */
  name: string;
  /** The candidate instance that sent it. */
  sender: string;
  holder: string | null;
  term: number;
  /** The registered successor's holder, when the record names one (a bound lease's `successor`). */
  successor?: string;
}

interface Held {
  sender: string;
  release: () => void;
}

const never = <T>() => new Promise<T>(() => undefined);

export class Network {
  readonly faults = new Map<string, number>();
  readonly applied: AppliedPut[] = [];
  /** Told of every applied put as it applies (a scenario's timeline). */
  onApply: ((put: AppliedPut) => void) | undefined;
  private held: Held[] = [];
  /** Processes cut off from the store, by label. */
  private readonly partitioned = new Set<string>();

  constructor(
    readonly clock: ManualClock,
    private readonly rng: Prng,
    /** Replaced by `calm()` for the quiet end of a sharded scenario. */
    public profile: FaultProfile,
  ) {}

  /** From now on no network fault: requests only travel (the quiet end of a scenario). */
  calm(): void {
    this.profile = { ...NO_FAULTS, baseLatencyMs: this.profile.baseLatencyMs, watch: this.profile.watch };
    for (const held of this.held.splice(0)) held.release();
  }

  /** Cuts `label` off from the store (`true`) or reconnects it. */
  partition(label: string, cut: boolean): void {
    if (cut) this.partitioned.add(label);
    else this.partitioned.delete(label);
  }

  isPartitioned(label: string): boolean {
    return this.partitioned.has(label);
  }

  count(kind: string): void {
    this.faults.set(kind, (this.faults.get(kind) ?? 0) + 1);
  }

  /** One-way trip on the true clock: a sender's pause does not stop its packets. */
  async travel(): Promise<void> {
    const p = this.profile;
    let ms = this.rng.between(0, p.baseLatencyMs);
    if (this.rng.chance(p.tailP)) {
      this.count("tail-latency");
      ms += this.rng.between(p.tailMs[0], p.tailMs[1]);
    }
    if (ms > 0) await this.clock.sleep(ms);
  }

  drawPutFault(): PutFault {
    const p = this.profile;
    const draws: Array<[PutFault, number]> = [
      ["lost-request", p.lostRequestP],
      ["fail-before", p.failBeforeP],
      ["ambiguous-before", p.ambiguousBeforeP],
      ["fail-after", p.failAfterP],
      ["lost-response", p.lostResponseP],
      ["reorder", p.reorderP],
    ];
    let u = this.rng.next();
    for (const [fault, probability] of draws) {
      if (u < probability) {
        this.count(fault);
        return fault;
      }
      u -= probability;
    }
    return "none";
  }

  /** A fair coin from the scenario's stream. */
  coin(): boolean {
    return this.rng.chance(0.5);
  }

  drawGetFault(): "get-fail" | "get-hang" | "none" {
    const u = this.rng.next();
    const fault =
      u < this.profile.getFailP ? "get-fail" : u < this.profile.getFailP + this.profile.getHangP ? "get-hang" : "none";
    if (fault !== "none") this.count(fault);
    return fault;
  }

  /** Holds a put until a put from another sender has reached the store, or `maxHoldMs` passed. */
  async hold(sender: string): Promise<void> {
    const timeout = new AbortController();
    await new Promise<void>((resolve) => {
      const entry: Held = { sender, release: resolve };
      this.held.push(entry);
      void this.clock.sleep(this.profile.maxHoldMs, timeout.signal).then(() => {
        this.held = this.held.filter((h) => h !== entry);
        resolve();
      });
    });
    timeout.abort();
  }

  /** A put reaches the store: apply it, log it, then let puts held back behind it through. */
  async arrive(sender: string, put: () => Promise<Stored>): Promise<Stored> {
    try {
      const stored = await put();
      const r = stored.record;
      const applied: AppliedPut = { at: this.clock.now(), name: r.name, sender, holder: r.holder, term: r.term };
      if (r.successor) applied.successor = r.successor.holder;
      this.applied.push(applied);
      this.onApply?.(applied);
      return stored;
    } finally {
      const overtaken = this.held.filter((h) => h.sender !== sender);
      this.held = this.held.filter((h) => h.sender === sender);
      for (const h of overtaken) h.release();
    }
  }
}

/** One candidate's connection to the shared store, through the network and its process gate. */
export class ChaosStore extends StoreWrapper {
  constructor(
    inner: LeaseStore,
    private readonly network: Network,
    private readonly process: SimProcess,
  ) {
    // A profile without push takes the store's watch away on purpose: followers then poll.
    super(inner, { without: network.profile.watch ? [] : ["watch"] });
  }

  override get(name: string, options?: CallOptions): Promise<Stored | null> {
    return this.answer(options, this.getFlow(name));
  }

  override put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    return this.answer(options, this.putFlow(next, expected));
  }

  protected override watchOf(name: string, signal: AbortSignal): AsyncIterable<Stored | null> {
    return this.pushed(super.watchOf(name, signal), signal);
  }

  /** One request for the whole listing, with the faults of a read (the sharded elector lists every poll). */
  protected override async *listOf(prefix: string, options?: ListOptions): AsyncIterable<Listed> {
    const records = await this.answer(
      undefined,
      this.readFlow(async () => {
        const out: Listed[] = [];
        for await (const stored of super.listOf(prefix, options)) out.push(stored);
        return out;
      }),
    );
    yield* records;
  }

  private getFlow(name: string): Promise<Stored | null> {
    return this.readFlow(() => this.inner.get(name));
  }

  private async readFlow<T>(read: () => Promise<T>): Promise<T> {
    const fault = this.network.drawGetFault();
    await this.cutOff();
    await this.network.travel();
    if (fault === "get-hang") return never();
    if (fault === "get-fail") throw new LeaseStoreError("chaos: read failed (503)", { ambiguous: false });
    const result = await read();
    await this.network.travel();
    if (this.network.isPartitioned(this.process.label)) return never();
    return result;
  }

  /** A request sent while cut off is refused at once (half the time) or lost. */
  private async cutOff(): Promise<void> {
    if (!this.network.isPartitioned(this.process.label)) return;
    this.network.count("partitioned-call");
    if (this.network.coin()) throw new LeaseStoreError("chaos: connection refused (partitioned)", { ambiguous: false });
    return never();
  }

  private async putFlow(next: LeaseRecord, expected: Revision | null): Promise<Stored> {
    const fault = this.network.drawPutFault();
    const sender = this.process.label;
    await this.cutOff();
    await this.network.travel();
    if (fault === "lost-request") return never();
    if (fault === "fail-before") throw new LeaseStoreError("chaos: rejected before apply (400)", { ambiguous: false });
    if (fault === "ambiguous-before") {
      throw new LeaseStoreError("chaos: timed out before the store saw it", { ambiguous: true });
    }
    if (fault === "reorder") await this.network.hold(sender);
    const stored = await this.network.arrive(sender, () => this.inner.put(next, expected));
    if (fault === "lost-response") return never();
    await this.network.travel();
    if (this.network.isPartitioned(sender)) return never();
    if (fault === "fail-after") throw new LeaseStoreError("chaos: response lost after apply", { ambiguous: true });
    return stored;
  }

  /**
   * Hands the flow's outcome to the candidate through its gate. An abort (the caller's timeout)
   * answers at once but does not recall the request: it may still land.
   */
  private answer<T>(options: CallOptions | undefined, flow: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const once = (settle: () => void) => () => {
        if (settled) return;
        settled = true;
        settle();
      };
      const signal = options?.signal;
      const aborted = () =>
        this.process.deliver(once(() => reject(new LeaseStoreError("chaos: call aborted", { ambiguous: true }))));
      if (signal?.aborted) return aborted();
      signal?.addEventListener("abort", aborted, { once: true });
      flow.then(
        (value) => this.process.deliver(once(() => resolve(value))),
        (error: unknown) => this.process.deliver(once(() => reject(error))),
      );
    });
  }

  /** Pushed changes travel like answers: late, and not while the process is paused. */
  private async *pushed(source: AsyncIterable<Stored | null>, signal: AbortSignal): AsyncIterable<Stored | null> {
    for await (const stored of source) {
      await this.network.travel();
      await new Promise<void>((resolve) => this.process.deliver(resolve));
      if (signal.aborted) return;
      yield stored;
    }
  }
}
