/**
 * `leasehold cron --name NAME --schedule "CRON" -- CMD ARGS...`: every replica runs the same line;
 * for each fire of the schedule exactly one of them runs CMD (docs/cli.md, docs/schedule.md).
 *
 * The fires and the job's record are `schedule()`'s (src/schedule/): one look per fire, one claim
 * (the next term) by the replica that runs it, one finish. The command runs under the same guard as
 * `leasehold run`'s (./job.ts): a process group of its own, and a deadline on the monotonic clock
 * held by the guard, a process outside that group. Here the deadline is final from the start (a
 * run is never renewed): `--at-most` after the claim was sent, SIGTERM `--grace` before it and
 * SIGKILL at it, whether this wrapper is paused, killed, or killed with its group. The command
 * gets LEASEHOLD_JOB, LEASEHOLD_FIRE (the fire, ISO 8601), LEASEHOLD_TERM (the fencing token) and
 * LEASEHOLD_IDENTITY.
 *
 * SIGINT/SIGTERM: forwarded to a command under way (SIGKILL after `--grace`, never past its
 * deadline); once it has exited and its fire is written finished, exit 128 + N, as `run` does when
 * stopped. SIGHUP is forwarded only. A token the API refuses or a store that cannot keep the
 * contract: exit 2 (after the command under way, if any, is stopped). Other store errors are
 * reported and the next look tries again.
 */
import { hostname } from "node:os";
import { isLeaseValidationError, isStoreContractError, LeaseValidationError } from "../errors.js";
import { openStore } from "../open-store.js";
import { type FireContext, SCHEDULE_DEFAULTS, type ScheduledJob, schedule } from "../schedule/index.js";
import { describeOutcome, exitCodeOf, Job, type JobOutcome, signalExitCode } from "./job.js";
import { authFailure, type CliIo, EXIT_USAGE, errorMessage, formatDuration } from "./output.js";

export interface CronOptions {
  store: string;
  name: string;
  schedule: string;
  timezone?: string;
  atMostMs?: number;
  atLeastMs?: number;
  graceMs?: number;
  maxLateMs?: number;
  missed?: "skip" | "run-latest";
  onCrash?: "skip" | "rerun";
  identity?: string;
  command: string[];
}

const FLAG_OF: Record<string, string> = {
  name: "--name",
  cron: "--schedule",
  timezone: "--tz",
  identity: "--identity",
  lockAtMostFor: "--at-most",
  lockAtLeastFor: "--at-least",
  maxLateMs: "--max-late",
  missed: "--missed",
  onCrash: "--on-crash",
};

/** A duration flag: a whole number with its unit (500ms, 30s, 5m, 1h). */
export function parseDuration(value: string): number {
  const match = /^(\d+)(ms|s|m|h)$/.exec(value);
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
  if (!match) throw new Error(`expected a duration like 500ms, 30s, 5m or 1h, got ${JSON.stringify(value)}`);
  return Number(match[1]) * factor[match[2] as keyof typeof factor];
}

export async function cronCommand(o: CronOptions, io: CliIo): Promise<number> {
  const store = await openStore(o.store, { env: io.env });
  const say = io.say;
  const identity = o.identity ?? `${hostname()}-${process.pid}`;
  const atMost = o.atMostMs ?? SCHEDULE_DEFAULTS.lockAtMostFor;
  const graceMs = o.graceMs ?? Math.min(10_000, Math.floor(atMost / 10));
  let stopping: NodeJS.Signals | undefined;
  let refused = false;
  let running: Job | undefined;

  const runCommand = (ctx: FireContext): Promise<JobOutcome> => {
    const fire = ctx.fire.toISOString();
    say(
      `fire ${fire}: running (term ${ctx.term}${ctx.rerun ? ", a rerun of a crashed fire" : ""}): ${o.command.join(" ")}`,
    );
    const started = new Job({
      command: o.command,
      env: {
        ...io.env,
        LEASEHOLD_JOB: o.name,
        LEASEHOLD_FIRE: fire,
        LEASEHOLD_TERM: String(ctx.term),
        LEASEHOLD_IDENTITY: identity,
      },
      until: ctx.deadline,
      termLeadMs: Math.min(graceMs, Math.max(0, ctx.deadline - performance.now())),
      graceMs,
      onStarted: (pid) =>
        say(`fire ${fire}: command started: pid ${pid}, process group ${started.group} (with its guard)`),
      onDeadline: (signal, agoMs) => {
        const when = agoMs > 100 ? ` ${Math.round(agoMs)} ms ago` : "";
        say(
          signal === "SIGTERM"
            ? `fire ${fire}: the guard sent SIGTERM to the command${when}: --at-most is near; SIGKILL at its end`
            : `fire ${fire}: the guard sent SIGKILL to the command${when}: --at-most has passed`,
        );
      },
    });
    running = started;
    return started.exited.then((outcome) => {
      running = undefined;
      return outcome;
    });
  };

  let job: ScheduledJob;
  try {
    job = schedule({
      store,
      name: o.name,
      cron: o.schedule,
      identity,
      metadata: { host: hostname(), pid: String(process.pid) },
      ...(o.timezone === undefined ? {} : { timezone: o.timezone }),
      lockAtMostFor: atMost,
      ...(o.atLeastMs === undefined ? {} : { lockAtLeastFor: o.atLeastMs }),
      ...(o.maxLateMs === undefined ? {} : { maxLateMs: o.maxLateMs }),
      ...(o.missed === undefined ? {} : { missed: o.missed }),
      ...(o.onCrash === undefined ? {} : { onCrash: o.onCrash }),
      fn: async (ctx) => {
        const outcome = await runCommand(ctx);
        if (outcome.kind === "too-late") {
          throw new Error("command was not started: its window (--at-most) had nearly closed when its guard was ready");
        }
        if (outcome.kind !== "exited" || exitCodeOf(outcome) !== 0)
          throw new Error(`command ${describeOutcome(outcome)}`);
      },
    });
  } catch (error) {
    await store.close?.();
    if (!isLeaseValidationError(error)) throw error;
    // Named by the flags the user typed, not the library's fields.
    throw new LeaseValidationError(
      "cron options",
      error.issues.map((i) => ({ path: FLAG_OF[i.path] ?? i.path, message: i.message })),
    );
  }

  return new Promise<number>((resolve) => {
    let finished = false;
    const finish = async (code: number) => {
      if (finished) return;
      finished = true;
      await job.stop();
      for (const [signal, handler] of handlers) process.off(signal, handler);
      await store.close?.().catch(() => undefined);
      resolve(code);
    };

    job.on("ran", ({ fire, term, durationMs, error }) => {
      const what = error === undefined ? "command exited with status 0" : errorMessage(error);
      say(`fire ${fire.toISOString()}: ${what} (term ${term}, ${formatDuration(durationMs)})`);
    });
    job.on("skipped-held", ({ fire, holder, term }) =>
      say(`fire ${fire.toISOString()}: skipped: "${o.name}" is held by ${holder ?? "nobody"} (term ${term})`),
    );
    job.on("skipped-done", ({ fire, last }) =>
      say(`fire ${fire.toISOString()}: skipped: already run or settled (the job's fire is ${last.toISOString()})`),
    );
    job.on("missed", ({ fires, truncated, reason }) => {
      const listed = fires.map((f) => f.toISOString()).join(" ");
      say(`missed ${fires.length}${truncated ? "+" : ""} fire${fires.length === 1 ? "" : "s"} (${reason}): ${listed}`);
    });
    job.on("overran", ({ fire, term }) =>
      say(`fire ${fire.toISOString()}: still running at --at-most (term ${term}): the guard stops it`),
    );
    job.on("error", ({ error, during }) => {
      const auth = authFailure(error, io.env) ?? (isStoreContractError(error) ? errorMessage(error) : undefined);
      if (auth === undefined) {
        say(`store error during ${during}: ${errorMessage(error)}`);
        return;
      }
      if (refused) return;
      refused = true;
      say(auth);
      running?.terminate(graceMs);
      void finish(EXIT_USAGE);
    });

    const onSignal = (signal: NodeJS.Signals) => {
      if (finished) return;
      if (signal === "SIGHUP") {
        running?.signal(signal);
        return;
      }
      if (stopping) return;
      stopping = signal;
      if (running) {
        say(`${signal}: forwarded to the command; exiting once it has (SIGKILL after ${graceMs} ms)`);
        running.signal(signal);
        running.killAfter(graceMs);
      } else {
        say(`${signal}: stopped scheduling "${o.name}"`);
      }
      void finish(signalExitCode(signal));
    };
    const handlers = (["SIGINT", "SIGTERM", "SIGHUP"] as const).map(
      (signal) => [signal, () => onSignal(signal)] as const,
    );
    for (const [signal, handler] of handlers) process.on(signal, handler);

    say(
      `scheduling "${job.name}" (${o.schedule}${o.timezone ? `, ${o.timezone}` : ", UTC"}) as ${identity} (store ${o.store}, at most ${formatDuration(atMost)} a run); next fire ${job.nextFire?.toISOString() ?? "none"}`,
    );
  });
}
