/**
 * Concurrent writers of one fenced resource, each with its own term, all started at once (one
 * turn of the event loop), `rounds` times on a fresh resource each: the fence tests of every
 * backend run it (object stores, SQL, HTTP). Each round checks what fencing promises under a race:
 *
 * - the writer with the highest term always succeeds (a new leader's first write always wins,
 *   whoever else writes at that moment);
 * - every other writer either succeeds or gets `StaleTermError` naming a newer term; nothing else;
 * - the resource ends holding the highest term and that writer's data;
 * - and when `effects` is given (the order the resource applied writes in), no write of a term
 *   lands after a write of a higher one.
 */
import { expect } from "vitest";
import { isStaleTermError } from "../../src/errors.js";

export interface TermRace {
  writers: number;
  rounds: number;
  /** The fenced write of writer `i` (term `term`) to round `round`'s resource, with `body`. */
  write(round: number, term: number, body: string): Promise<unknown>;
  /** What round `round`'s resource holds at the end. */
  read(round: number): Promise<{ term: number; body: string }>;
  /** The terms of the writes round `round`'s resource applied, in the order it applied them. */
  effects?(round: number): number[];
}

/** Terms 1..n in a random order, so the highest is not always the first or last to start. */
function shuffledTerms(n: number): number[] {
  const terms = Array.from({ length: n }, (_, i) => i + 1);
  for (let i = terms.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [terms[i], terms[j]] = [terms[j] as number, terms[i] as number];
  }
  return terms;
}

export async function raceTerms(race: TermRace): Promise<{ refused: number; written: number }> {
  let refused = 0;
  let written = 0;
  for (let round = 0; round < race.rounds; round++) {
    const terms = shuffledTerms(race.writers);
    const outcomes = await Promise.allSettled(terms.map((term) => race.write(round, term, `by term ${term}`)));
    const top = race.writers;
    outcomes.forEach((outcome, i) => {
      const term = terms[i] as number;
      if (outcome.status === "fulfilled") {
        written++;
        return;
      }
      refused++;
      expect(term, `round ${round}: the highest term's write failed: ${String(outcome.reason)}`).not.toBe(top);
      expect(isStaleTermError(outcome.reason), `round ${round}, term ${term}: ${String(outcome.reason)}`).toBe(true);
      const seen = (outcome.reason as { seenTerm?: number }).seenTerm;
      if (seen !== undefined) expect(seen).toBeGreaterThan(term);
    });
    expect(await race.read(round)).toEqual({ term: top, body: `by term ${top}` });
    const effects = race.effects?.(round);
    if (effects !== undefined) {
      const descents = effects.filter((term, i) => i > 0 && term < (effects[i - 1] as number));
      expect(descents, `round ${round}: writes applied in the order ${effects.join(", ")}`).toEqual([]);
      expect(effects.at(-1)).toBe(top);
    }
  }
  return { refused, written };
}
