/**
 * The safety checker (docs/design.md §3), over what the candidates believed and did:
 *
 * 1. One holder per term: each term was won by one candidate instance, and every record the store
 *    applied with a holder names one holder per term. Only the lease's own records count: a bound
 *    lease's session records live in the same store under other names, with terms of their own.
 * 2. Terms strictly increase over time (elections in the order they happened).
 * 3. No two candidates inside their safe windows at once, on true time. A candidate is inside its
 *    safe window while it believes it leads (elected, signal not aborted) and true time is before
 *    its own `leaderUntil`. A paused candidate may *believe* it leads long after that (its timers
 *    have not fired): that is outside the guarantee, and exactly what fencing is for. Windows of a
 *    lower term also end before any window of a higher term begins.
 * 4. Fencing: the resource's accepted terms never go down; an accepted write's term was won by its
 *    writer; and a write sent and landed inside its writer's safe window was never rejected (a
 *    rejection there would mean a higher term was already writing while this one was safe).
 *
 * Pure functions over plain data, so the multi-process test checks its logs with the same code.
 */
import type { FencedWrite } from "./fenced-resource.js";

export interface Election {
  /** Candidate instance (a restarted process is a new instance, even with the same identity). */
  candidate: string;
  identity: string;
  term: number;
  at: number;
}

/** Half-open [start, end) on true time during which `candidate` was inside its safe window for `term`. */
export interface SafeWindow {
  candidate: string;
  term: number;
  start: number;
  end: number;
}

export interface StoreWrite {
  /** The record written; writes to other records than `Trace.lease` are not the lease's terms. */
  name?: string;
  holder: string | null;
  term: number;
}

export interface Trace {
  /** In the order they happened. */
  elections: Election[];
  windows: SafeWindow[];
  /** Records the store applied (for memory/SQLite on the manual clock); omitted when unknown. */
  storeWrites?: StoreWrite[];
  /** The lease's name: when given, only `storeWrites` to it are judged (sessions share the store). */
  lease?: string;
  /** Fenced writes in the order the resource applied them. */
  fenced: FencedWrite[];
}

export function checkTrace(trace: Trace): string[] {
  return [
    ...checkOneHolderPerTerm(trace),
    ...checkTermsIncrease(trace.elections),
    ...checkSafeWindows(trace.windows),
    ...checkFencing(trace),
  ];
}

export function checkOneHolderPerTerm(trace: Pick<Trace, "elections" | "storeWrites" | "lease">): string[] {
  const out: string[] = [];
  const winner = new Map<number, Election>();
  for (const e of trace.elections) {
    const first = winner.get(e.term);
    if (first && first.candidate !== e.candidate) {
      out.push(`term ${e.term} won twice: by ${first.candidate} at ${first.at} and by ${e.candidate} at ${e.at}`);
    } else if (first) {
      out.push(`term ${e.term} elected twice for ${e.candidate} (at ${first.at} and ${e.at})`);
    } else winner.set(e.term, e);
  }
  if (!trace.storeWrites) return out;
  const holders = new Map<number, string>();
  for (const w of trace.storeWrites) {
    if (w.holder === null || (trace.lease !== undefined && w.name !== trace.lease)) continue;
    const seen = holders.get(w.term);
    if (seen === undefined) holders.set(w.term, w.holder);
    else if (seen !== w.holder) out.push(`store applied term ${w.term} for two holders: ${seen} and ${w.holder}`);
  }
  for (const e of trace.elections) {
    if (holders.get(e.term) !== e.identity) {
      out.push(`${e.candidate} elected at term ${e.term} but the store never applied that term for ${e.identity}`);
    }
  }
  return out;
}

export function checkTermsIncrease(elections: Election[]): string[] {
  const out: string[] = [];
  for (let i = 1; i < elections.length; i++) {
    const a = elections[i - 1]!;
    const b = elections[i]!;
    if (b.term <= a.term) {
      out.push(`terms went from ${a.term} (${a.candidate} at ${a.at}) to ${b.term} (${b.candidate} at ${b.at})`);
    }
    if (b.at < a.at) out.push(`elections recorded out of time order: ${a.at} then ${b.at}`);
  }
  return out;
}

/** Joins back-to-back windows of one candidate and term (each renewal starts a new piece). */
export function mergeWindows(windows: SafeWindow[]): SafeWindow[] {
  const sorted = windows
    .filter((w) => w.end > w.start)
    .sort((a, b) => a.candidate.localeCompare(b.candidate) || a.term - b.term || a.start - b.start);
  const out: SafeWindow[] = [];
  for (const w of sorted) {
    const last = out[out.length - 1];
    if (last && last.candidate === w.candidate && last.term === w.term && w.start <= last.end) {
      last.end = Math.max(last.end, w.end);
    } else out.push({ ...w });
  }
  return out.sort((a, b) => a.start - b.start);
}

export function checkSafeWindows(windows: SafeWindow[]): string[] {
  const out: string[] = [];
  const merged = mergeWindows(windows);
  for (let i = 0; i < merged.length; i++) {
    const a = merged[i]!;
    for (let j = i + 1; j < merged.length; j++) {
      const b = merged[j]!;
      const describe = (w: SafeWindow) => `${w.candidate} term ${w.term} [${w.start}, ${w.end})`;
      if (a.candidate !== b.candidate && b.start < a.end) {
        out.push(`two candidates inside their safe windows at once: ${describe(a)} and ${describe(b)}`);
      }
      if (a.term > b.term) out.push(`a higher term's window came first: ${describe(a)} before ${describe(b)}`);
    }
  }
  return out;
}

export function checkFencing(trace: Pick<Trace, "elections" | "windows" | "fenced">): string[] {
  const out: string[] = [];
  const winners = new Map(trace.elections.map((e) => [e.term, e.candidate]));
  let highest = Number.NEGATIVE_INFINITY;
  for (const w of trace.fenced) {
    if (!w.accepted) continue;
    if (w.term < highest) out.push(`resource accepted term ${w.term} from ${w.writer} after term ${highest}`);
    highest = Math.max(highest, w.term);
    if (winners.get(w.term) !== w.writer) {
      out.push(`resource accepted term ${w.term} from ${w.writer}, but that term was won by ${winners.get(w.term)}`);
    }
  }
  const merged = mergeWindows(trace.windows);
  for (const w of trace.fenced) {
    if (w.accepted) continue;
    const safe = merged.some(
      (s) => s.candidate === w.writer && s.term === w.term && s.start <= w.sentAt && w.landedAt < s.end,
    );
    if (safe) {
      out.push(
        `resource rejected term ${w.term} from ${w.writer}, sent at ${w.sentAt} and landed at ${w.landedAt} inside its safe window`,
      );
    }
  }
  return out;
}

/**
 * Tracks safe windows from sampled elector state. State only changes while code runs, and code
 * only runs at instants the harness samples after (every timer, every delivery), so the pieces
 * between samples are exact.
 */
export class SafeWindowTracker {
  readonly windows: SafeWindow[] = [];
  private readonly open = new Map<string, { term: number; until: number; since: number }>();

  /** `belief`: the term and leaderUntil the candidate acts on now, or undefined when it does not lead. */
  sample(candidate: string, now: number, belief: { term: number; until: number } | undefined): void {
    const current = this.open.get(candidate);
    if (current && belief && current.term === belief.term && current.until === belief.until) return;
    if (current) this.close(candidate, current, now);
    if (belief) this.open.set(candidate, { ...belief, since: now });
  }

  /** Ends every open window at `now` (the end of the run). */
  closeAll(now: number): void {
    for (const [candidate, current] of this.open) this.close(candidate, current, now);
  }

  private close(candidate: string, current: { term: number; until: number; since: number }, now: number): void {
    this.open.delete(candidate);
    const end = Math.min(now, current.until);
    if (end > current.since) this.windows.push({ candidate, term: current.term, start: current.since, end });
  }
}
