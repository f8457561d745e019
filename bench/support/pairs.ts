/**
 * The leader-change scenario failover and handover share: many independent leases at once, each
 * with a leader A and a follower B. A is stopped (crash: `release: false`; graceful: `release: true`)
 * at a random instant, and we time how long until B leads. Running leases side by side gives more
 * samples per second of wall time; they share nothing but the process and the store.
 */
import type { LeaseStore } from "../../src/lease.js";
import { type Algorithm, type Candidate, candidate, randomBetween, sleep, within } from "./common.js";

export interface PairSpec {
  /** Groups samples in the result (e.g. "sqlite/ours/2000"). */
  group: string;
  algorithm: Algorithm;
  /** Each candidate gets its own store from here (one per process in real life). */
  store: () => LeaseStore;
  leaseMs: number;
}

export interface PairSample {
  group: string;
  /** From the call to stop() on A until B's elected event, ms. */
  fromStop: number;
  /** From A's last successful write being sent until B's elected event, ms. */
  fromLastWrite: number;
}

export interface PairRoundOptions {
  release: boolean;
  /** A is stopped at a random instant this long after the followers have settled. */
  spreadMs: (spec: PairSpec) => number;
  /** Time for B to read the lease (and open its watch) before any A stops. */
  settleMs: number;
  /** Prefix for the lease names of this round. */
  round: string;
}

export interface PairRoundResult {
  samples: PairSample[];
  /** Pairs where B never led in time, or led before A stopped: reported, never hidden. */
  anomalies: string[];
}

export async function runPairRound(specs: PairSpec[], options: PairRoundOptions): Promise<PairRoundResult> {
  const pairs = specs.map((spec, i) => {
    const name = `${options.round}-${i}`;
    const make = (identity: string): Candidate =>
      candidate(spec.algorithm, { store: spec.store(), name, identity, leaseMs: spec.leaseMs });
    return { spec, name, a: make(`a-${i}`), b: make(`b-${i}`) };
  });
  const anomalies: string[] = [];
  const samples: PairSample[] = [];
  try {
    for (const p of pairs) p.a.start();
    const longest = Math.max(...specs.map((s) => s.leaseMs));
    await Promise.all(
      pairs.map(async (p) => {
        if ((await within(p.a.elected, 3 * longest)) === undefined) anomalies.push(`${p.name}: A never led`);
      }),
    );
    for (const p of pairs) p.b.start();
    await sleep(options.settleMs);
    await Promise.all(
      pairs.map(async (p) => {
        await sleep(randomBetween(0, options.spreadMs(p.spec)));
        const early = await within(p.b.elected, 0);
        const last = p.a.lastWriteSentAt();
        const stoppedAt = performance.now();
        await p.a.stop({ release: options.release });
        if (early !== undefined || last === undefined) {
          anomalies.push(`${p.name}: B led before A stopped`);
          return;
        }
        const at = await within(p.b.elected, 3 * p.spec.leaseMs);
        if (at === undefined) {
          anomalies.push(`${p.name}: B did not lead within 3 x leaseMs`);
          return;
        }
        samples.push({ group: p.spec.group, fromStop: at - stoppedAt, fromLastWrite: at - last });
      }),
    );
  } finally {
    await Promise.all(pairs.flatMap((p) => [p.a.stop({ release: true }), p.b.stop({ release: true })]));
  }
  return { samples, anomalies };
}
