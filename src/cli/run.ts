/**
 * `leasehold run --lease NAME -- CMD ARGS...`: campaign for a lease and run CMD while leader.
 *
 * Life of one wrapper (docs/cli.md has the user's view):
 *   waiting   campaign; "waiting" messages on stderr.
 *   running   elected: CMD starts with LEASEHOLD_LEASE, LEASEHOLD_TERM, LEASEHOLD_IDENTITY. The
 *             elector keeps renewing, and every renewal hands CMD's guard (job.ts) the new end of the
 *             safe window: the guard SIGKILLs CMD there unless a later one came, so CMD cannot
 *             outlive the lease whether the wrapper is paused, killed or killed with its group.
 *   CMD exits while leader: release the lease, exit with CMD's status. With --once and status 0:
 *             keep holding (renewing, not rerunning) until the term ends or the wrapper is stopped.
 *   leadership lost (renewal conflict or expiry): SIGTERM to CMD at once, SIGKILL after the grace
 *             period or when the safe window closes, whichever is first; once CMD is gone, exit 75
 *             (EX_TEMPFAIL) without campaigning again: a supervisor restarts the wrapper, which then
 *             campaigns afresh.
 *   renewals late: the guard sends SIGTERM halfway between the missed renewal and the end of the
 *             window, SIGKILL at its end; CMD stopped that way also means exit 75.
 *   guard gone (killed) before CMD's end was reported: SIGKILL to CMD's process group at once, stop
 *             renewing without releasing (the lease runs out), exit 75.
 *   SIGINT/SIGTERM to the wrapper: forwarded to CMD; the elector's graceful stop keeps renewing
 *             until CMD has exited (trackWork), SIGKILL after the grace period, then releases so
 *             the next candidate takes over at once. SIGHUP is only forwarded (daemons reload on it).
 */

import { hostname } from "node:os";
import { defined } from "../defined.js";
import { resolveElectorOptions } from "../elector/options.js";
import {
  isLeadershipLostError,
  isLeaseStillHeldError,
  isLeaseValidationError,
  isStoreContractError,
  LeaseValidationError,
} from "../errors.js";
import { Elector, type ElectorOptions } from "../leader/elector.js";
import type { LeaseStore } from "../lease.js";
import { openStore } from "../open-store.js";
import { describeOutcome, exitCodeOf, Job, type JobOutcome, signalExitCode, sigtermLeadMs } from "./job.js";
import { authFailure, type CliIo, EXIT_LOST, EXIT_USAGE, errorMessage } from "./output.js";

export interface RunOptions {
  store: string;
  lease: string;
  identity?: string;
  leaseMs?: number;
  renewMs?: number;
  retryMs?: number;
  pollMs?: number;
  graceMs?: number;
  once: boolean;
  command: string[];
}

/** After SIGKILL, how long the elector's graceful stop still waits for CMD to be reaped. */
const KILL_SLACK_MS = 5000;

const FLAG_OF: Record<string, string> = {
  name: "--lease",
  identity: "--identity",
  leaseMs: "--lease-ms",
  renewMs: "--renew-ms",
  retryMs: "--retry-ms",
  pollMs: "--poll-ms",
  graceMs: "--grace-ms",
};

/** Elector option errors named by the flag the user typed, not the library field. */
function electorOptions(store: LeaseStore, o: RunOptions): ElectorOptions & { graceMs: number } {
  const options: ElectorOptions = {
    store,
    name: o.lease,
    identity: o.identity ?? `${hostname()}-${process.pid}`,
    metadata: { host: hostname(), pid: String(process.pid) },
    ...defined({ leaseMs: o.leaseMs, renewMs: o.renewMs, retryMs: o.retryMs, pollMs: o.pollMs, graceMs: o.graceMs }),
  };
  try {
    // The Elector runs this check too; running it here names the user's flags in the error.
    const resolved = resolveElectorOptions(options);
    return { ...options, graceMs: resolved.graceMs };
  } catch (error) {
    if (!isLeaseValidationError(error)) throw error;
    throw new LeaseValidationError(
      "run options",
      error.issues.map((i) => ({ path: FLAG_OF[i.path] ?? i.path, message: i.message })),
    );
  }
}

/** Below this, the guard's and the wrapper's own timers cannot keep up, whatever the store. */
const MIN_RENEWAL_SLACK_MS = 100;

/**
 * Refuses a lease too short for this store: a renewal falls due `renewMs` after the last one and
 * must land before the safe window closes (`leaseMs - safetyMs`); the slack between the two has to
 * cover a round trip to the store (measured once, with a read) twice over, and the timers. A lease
 * below it would be won and lost at once, its command killed by the guard as soon as it started.
 */
async function checkRoundTrip(store: LeaseStore, elector: Elector): Promise<void> {
  const started = performance.now();
  try {
    await store.get(elector.name);
  } catch (error) {
    // Not a judgement on the lease: a refused token ends the command (exit 2); other errors are
    // the elector's to report and retry.
    if (authFailure(error, {}) !== undefined) throw error;
    return;
  }
  const roundTripMs = performance.now() - started;
  const slackMs = elector.leaseMs - elector.safetyMs - elector.renewMs;
  const neededMs = Math.max(MIN_RENEWAL_SLACK_MS, 2 * roundTripMs);
  if (slackMs >= neededMs) return;
  // With the default proportions (renew a third, safety a tenth) the slack is 17/30 of the lease.
  const suggested = Math.ceil((neededMs * 30) / 17 / 100) * 100;
  throw new LeaseValidationError("run options", [
    {
      path: "--lease-ms",
      message: `a lease of ${elector.leaseMs} ms leaves a renewal ${Math.round(slackMs)} ms between falling due and the end of its safe window, but a round trip to the store took ${Math.round(roundTripMs)} ms (${Math.round(neededMs)} ms needed, twice the round trip and at least ${MIN_RENEWAL_SLACK_MS} ms for the timers): use --lease-ms ${suggested} or more`,
    },
  ]);
}

export async function runCommand(o: RunOptions, io: CliIo): Promise<number> {
  const store = await openStore(o.store, { env: io.env });
  let options: ElectorOptions & { graceMs: number };
  let elector: Elector;
  try {
    options = electorOptions(store, o);
    elector = new Elector(options);
  } catch (error) {
    await store.close?.();
    throw error;
  }
  const { graceMs } = options;
  const { leaseMs, renewMs, safetyMs } = elector;
  try {
    await checkRoundTrip(store, elector);
  } catch (error) {
    await store.close?.();
    throw error;
  }
  const termLeadMs = sigtermLeadMs({ leaseMs, renewMs, safetyMs, graceMs });
  const name = elector.name;
  const say = io.say;

  return new Promise<number>((resolve) => {
    let job: Job | undefined;
    /** --once: CMD succeeded in this term; hold without rerunning. */
    let holding = false;
    /** The wrapper was asked to stop (signal). */
    let stopping: NodeJS.Signals | undefined;
    /** Leadership was lost while CMD ran or while holding. */
    let lost = false;
    let finished = false;
    let lastError = "";
    /** The API refused our token: no retry fixes that, so the wrapper ends with exit 2. */
    let refused = false;

    const finish = async (code: number, release: boolean) => {
      if (finished) return;
      finished = true;
      try {
        await elector.stop({ release, graceMs: graceMs + KILL_SLACK_MS });
      } finally {
        for (const [signal, handler] of handlers) process.off(signal, handler);
        await store.close?.().catch(() => undefined);
        resolve(code);
      }
    };

    const onJobExit = (term: number, ended: Job, outcome: JobOutcome) => {
      job = undefined;
      const code = exitCodeOf(outcome);
      if (refused) {
        say(`command ${describeOutcome(outcome)}; exiting ${EXIT_USAGE}`);
        void finish(EXIT_USAGE, false);
      } else if (outcome.kind === "guard-died") {
        // Not knowing whether CMD is gone (its group got SIGKILL, but a process stuck in the kernel
        // dies only when its call returns), the lease is left to run out rather than released.
        lost = true;
        say(
          `command ${describeOutcome(outcome)}; SIGKILL sent to its process group ${ended.group}; ` +
            `giving up "${name}" (term ${term}) without releasing it; exiting ${EXIT_LOST}`,
        );
        void finish(EXIT_LOST, false);
      } else if (lost) {
        say(`command ${describeOutcome(outcome)} after leadership was lost; exiting ${EXIT_LOST}`);
        void finish(EXIT_LOST, false);
      } else if (outcome.kind === "too-late" || ended.stoppedAtDeadline) {
        const why = ended.stoppedAtDeadline ? ` after the guard sent it ${ended.stoppedAtDeadline}` : "";
        say(`command ${describeOutcome(outcome)}${why}: no renewal of "${name}" came in time; exiting ${EXIT_LOST}`);
        void finish(EXIT_LOST, true);
      } else if (stopping) {
        say(`command ${describeOutcome(outcome)}; releasing "${name}" (term ${term})`);
        void finish(code, true);
      } else if (o.once && code === 0) {
        holding = true;
        say(`command finished; holding "${name}" for the rest of term ${term} without rerunning (--once)`);
      } else {
        say(`command ${describeOutcome(outcome)}; releasing "${name}" (term ${term})`);
        void finish(code, true);
      }
    };

    elector.on("leader", ({ holder, term }) => {
      if (holder === elector.identity || finished) return;
      if (holder === null) say(`"${name}" is free (term ${term}); campaigning`);
      else say(`waiting: "${name}" is held by ${holder} (term ${term})`);
    });

    elector.on("error", ({ error, during }) => {
      // Credentials the store refuses, or a store that cannot keep the contract: no retry can help.
      const auth = authFailure(error, io.env) ?? (isStoreContractError(error) ? errorMessage(error) : undefined);
      if (auth !== undefined) {
        if (refused) return;
        refused = true;
        say(auth);
        // Leading or not, this wrapper cannot keep the lease: stop the command (if any), then exit 2.
        if (job) job.terminate(graceMs);
        else void finish(EXIT_USAGE, false);
        return;
      }
      // The API refuses a takeover until its own clock, with its skew bound, says the lease is
      // free: an expected wait, said once, not an error.
      const message = isLeaseStillHeldError(error)
        ? `waiting: the API still counts "${name}" as held by its clock; trying again`
        : `store error during ${during}: ${errorMessage(error)}`;
      if (message !== lastError) say(message);
      lastError = message;
    });

    elector.on("elected", ({ term, signal }) => {
      if (stopping || finished || lost) return; // the stop in progress releases it
      lastError = "";
      say(`elected leader of "${name}" (term ${term}); starting: ${o.command.join(" ")}`);
      const started = new Job({
        command: o.command,
        env: {
          ...io.env,
          LEASEHOLD_LEASE: name,
          LEASEHOLD_TERM: String(term),
          LEASEHOLD_IDENTITY: elector.identity,
        },
        until: elector.current.leaderUntil ?? performance.now(),
        termLeadMs,
        graceMs,
        onStarted: (pid) => say(`command started: pid ${pid}, process group ${started.group} (with its guard)`),
        onDeadline: (signal, agoMs) => {
          // Read late when the wrapper itself was paused: say when it happened.
          const when = agoMs > 100 ? ` ${Math.round(agoMs)} ms ago` : "";
          say(
            signal === "SIGTERM"
              ? `the guard sent SIGTERM to the command${when}: no renewal of "${name}" came in time; SIGKILL follows when the safe window closes unless one does`
              : `the guard sent SIGKILL to the command${when}: the safe window of "${name}" closed without a renewal`,
          );
        },
      });
      job = started;
      elector.trackWork(started.exited);
      // Leadership ended under CMD: stop it at once. A wrapper being stopped already forwarded its signal.
      signal.addEventListener("abort", () => {
        if (stopping) return;
        const why = signal.reason;
        // Expired: the safe window has closed, so SIGKILL at once (the guard's SIGTERM came earlier).
        if (isLeadershipLostError(why) && why.reason === "expired") started.leadershipEnded();
        else started.terminate(graceMs);
      });
      void started.exited.then((outcome) => onJobExit(term, started, outcome));
    });

    elector.on("renewed", () => job?.extend(elector.current.leaderUntil));

    elector.on("deposed", ({ term, reason }) => {
      // Whatever the reason, the deadline the command last got is now final.
      job?.leadershipEnded();
      if (finished || stopping || reason === "released" || reason === "stopped") return;
      lost = true;
      say(`lost leadership of "${name}" (term ${term}: ${reason === "conflict" ? "taken over or released" : reason})`);
      // No new campaign from this wrapper: stop the elector (it is a follower now, nothing to release).
      void elector.stop({ release: true });
      if (job && reason === "expired") {
        say("the lease's safe window has closed: SIGKILL sent to the command's process group");
      } else if (job) {
        say(`stopping the command (SIGTERM; SIGKILL after ${graceMs} ms or when the safe window closes, if sooner)`);
        job.terminate(graceMs);
      } else {
        void finish(EXIT_LOST, false);
      }
    });

    const onSignal = (signal: NodeJS.Signals) => {
      if (finished) return;
      if (job) {
        job.signal(signal);
        if (signal === "SIGHUP") return; // forwarded only: a reload, not a stop
        if (!stopping) {
          stopping = signal;
          say(`${signal}: forwarded to the command; releasing "${name}" once it exits (SIGKILL after ${graceMs} ms)`);
          job.killAfter(graceMs);
          // Keeps renewing until CMD has exited (tracked work), then releases.
          void elector.stop({ release: true, graceMs: graceMs + KILL_SLACK_MS });
        }
        return;
      }
      stopping = signal;
      if (holding) {
        say(`${signal}: releasing "${name}"`);
        void finish(0, true);
      } else if (lost) {
        void finish(EXIT_LOST, false);
      } else {
        say(`${signal}: stopped waiting for "${name}"`);
        void finish(signalExitCode(signal), true);
      }
    };
    const handlers = (["SIGINT", "SIGTERM", "SIGHUP"] as const).map(
      (signal) => [signal, () => onSignal(signal)] as const,
    );
    for (const [signal, handler] of handlers) process.on(signal, handler);

    say(
      `campaigning for "${name}" as ${elector.identity} (store ${o.store}, lease ${elector.leaseMs} ms${o.once ? ", --once" : ""})`,
    );
    elector.start();
  });
}
