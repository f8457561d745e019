/**
 * A job's fires, from its cron line: parsing and time zones are croner's (seconds, `L`, `W`, `#`,
 * nicknames, IANA zones with DST handled), never hand-written here. Fires are wall-clock instants
 * in ms since the epoch, whole seconds. Only pure evaluation is used (a `Cron` without a function
 * starts no timer), so this runs on every runtime. Runtime-neutral.
 */
import { Cron } from "croner";
import { LeaseValidationError } from "../errors.js";

/** The most fires one question enumerates (a listing of missed fires, fires covered by a run). */
export const MAX_LISTED_FIRES = 1000;

export class CronSchedule {
  private readonly cron: Cron;

  /**
   * `expression`: five fields (minute first) or six (seconds first), or a nickname (`@daily`).
   * `timezone`: an IANA zone (default UTC). Throws `LeaseValidationError` naming `cron` or
   * `timezone` when either cannot be read, or when the line never fires.
   */
  constructor(
    readonly expression: string,
    readonly timezone?: string,
    what = "schedule options",
  ) {
    const fail = (path: string, message: string) => new LeaseValidationError(what, [{ path, message }]);
    if (typeof expression !== "string" || expression.trim() === "" || expression.includes(":")) {
      throw fail(
        "cron",
        "expected a cron line: 5 fields (minute hour day month weekday), 6 with seconds first, or @daily",
      );
    }
    if (timezone !== undefined && (typeof timezone !== "string" || timezone === "")) {
      throw fail("timezone", "expected an IANA time zone name, e.g. Europe/Paris");
    }
    try {
      this.cron = new Cron(expression, {
        mode: "5-or-6-parts",
        paused: true,
        ...(timezone === undefined ? { timezone: "Etc/UTC" } : { timezone }),
      });
    } catch (error) {
      throw fail("cron", `expected a cron line (${message(error)})`);
    }
    let first: number | undefined;
    try {
      first = this.next(0);
    } catch (error) {
      throw fail("timezone", `expected an IANA time zone name, e.g. Europe/Paris (${message(error)})`);
    }
    if (first === undefined) throw fail("cron", `"${expression}" never fires`);
  }

  /** The first fire strictly after `afterMs`, or `undefined` when the line fires no more. */
  next(afterMs: number): number | undefined {
    return this.cron.nextRun(new Date(afterMs))?.getTime();
  }

  /** The latest fire at or before `atMs`, or `undefined` when there is none. */
  latest(atMs: number): number | undefined {
    return this.cron.previousRuns(1, new Date(atMs + 1))[0]?.getTime();
  }

  /** The fires in (`afterMs`, `uptoMs`], ascending, at most `limit` of them (the earliest). */
  between(afterMs: number, uptoMs: number, limit = MAX_LISTED_FIRES): number[] {
    const out: number[] = [];
    let at = afterMs;
    while (out.length < limit) {
      const next = this.next(at);
      if (next === undefined || next > uptoMs) break;
      out.push(next);
      at = next;
    }
    return out;
  }
}

function message(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/^Cron(Pattern|Date|Options)?: /, "");
}
