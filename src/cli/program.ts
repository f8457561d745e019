/**
 * The `leasehold` command line (commander): run, cron, status, watch, release, migrate, migrate-group,
 * doctor, serve. `runCli` parses
 * `argv`, runs one command and returns the exit code: the command's own (run), 0 on success,
 * 2 for usage errors (unknown flags, bad values, bad store URL, bad names), 1 for runtime errors.
 * Errors are one line on stderr.
 */

import { readFileSync } from "node:fs";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { defined } from "../defined.js";
import {
  isLeaseCorruptError,
  isLeaseStoreError,
  isLeaseValidationError,
  isStoreUnavailableError,
  LeaseValidationError,
} from "../errors.js";
import { type ChosenStore, chooseStoreUrl, DEFAULT_DB, storeUrlFormsOn } from "../open-store.js";
import { cronCommand, parseDuration } from "./cron.js";
import { doctorCommand } from "./doctor.js";
import { migrateCommand } from "./migrate.js";
import { migrateGroupCommand } from "./migrate-group.js";
import { authFailure, type CliIo, EXIT_RUNTIME, EXIT_USAGE, errorMessage } from "./output.js";
import { releaseCommand } from "./release.js";
import { runCommand } from "./run.js";
import { serveCommand } from "./serve.js";
import { statusCommand } from "./status.js";
import { watchCommand } from "./watch.js";

export const DEFAULT_STORE = `sqlite:${DEFAULT_DB}`;

/** The package's version, read from the package.json beside src/ (or dist/) at run time. */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

function wholeNumber(what: string, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) > max) {
      throw new InvalidArgumentError(`expected ${what}, got ${JSON.stringify(value)}`);
    }
    return Number(value);
  };
}
const ms = wholeNumber("a whole number of milliseconds");

function storeOption(): Option {
  return new Option(
    "--store <url>",
    `where leases live: ${storeUrlFormsOn("node").join(", ")} (default: $LEASEHOLD_STORE, else sqlite:$LEASEHOLD_DB, else ${DEFAULT_STORE})`,
  );
}

/** Which store a command uses and what chose it, as `npm start` chooses (README: "Server configuration"). */
export function chooseStore(env: CliIo["env"], given: string | undefined): ChosenStore {
  const { url, from } = chooseStoreUrl({ flag: given, store: env.LEASEHOLD_STORE, db: env.LEASEHOLD_DB });
  return { url, from };
}

export function buildProgram(
  io: CliIo,
  setExitCode: (code: number) => void,
  chosen: (choice: ChosenStore) => void = () => undefined,
): Command {
  const storeOf = (_io: CliIo, given: string | undefined): string => {
    const choice = chooseStore(io.env, given);
    chosen(choice);
    return choice.url;
  };
  const program = new Command("leasehold")
    .description("Leader election on compare-and-swap leases")
    .version(packageVersion(), "-V, --version", "print the version and exit")
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeErr: (text) => process.stderr.write(text),
      outputError: (text, write) => write(`leasehold: ${text.replace(/^error: /, "")}`),
    });

  program
    .command("run")
    .description("campaign for a lease and run a command while leader (stderr: progress; exit: the command's status)")
    .requiredOption("--lease <name>", "lease name")
    .addOption(storeOption())
    .option("--identity <id>", "this candidate's identity (default: HOSTNAME-PID)")
    .option("--lease-ms <ms>", "lease duration (default 15000)", ms)
    .option("--renew-ms <ms>", "renewal interval (default lease-ms / 3)", ms)
    .option("--retry-ms <ms>", "back-off after a failed store call (default lease-ms / 7.5)", ms)
    .option("--poll-ms <ms>", "how often a waiting candidate reads the lease to hear of a release (default 1000)", ms)
    .option("--grace-ms <ms>", "SIGTERM-to-SIGKILL delay when the command must stop (default lease-ms)", ms)
    .option("--once", "run the command once per term: after it exits 0, hold the lease without rerunning", false)
    .argument("<command...>", "the command and its arguments (after --)")
    .passThroughOptions()
    .addHelpText(
      "after",
      `
The command gets LEASEHOLD_LEASE, LEASEHOLD_TERM (the fencing token) and LEASEHOLD_IDENTITY.
Exit status: the command's; 75 when leadership was lost (run under a supervisor that restarts).

Examples:
  leasehold run --lease jobs/report -- ./report.sh --since yesterday
  leasehold run --lease jobs/migrate --once --store dynamodb://leases?region=eu-west-1 -- npm run migrate`,
    )
    .action(async (command: string[], opts) => {
      setExitCode(
        await runCommand(
          {
            store: storeOf(io, opts.store),
            lease: opts.lease,
            once: opts.once === true,
            command,
            ...defined({
              identity: opts.identity,
              leaseMs: opts.leaseMs,
              renewMs: opts.renewMs,
              retryMs: opts.retryMs,
              pollMs: opts.pollMs,
              graceMs: opts.graceMs,
            }),
          },
          io,
        ),
      );
    });

  const duration = (value: string): number => {
    try {
      return parseDuration(value);
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
  };
  program
    .command("cron")
    .description("run a command on one replica per fire of a cron schedule (every replica runs the same line)")
    .requiredOption("--name <name>", "the job's record (a lease name)")
    .requiredOption(
      "--schedule <cron>",
      'cron line: 5 fields, 6 with seconds first, or @daily (quote it: "*/5 * * * *")',
    )
    .addOption(storeOption())
    .option("--tz <zone>", "IANA time zone the schedule is read in (default UTC)")
    .option(
      "--at-most <dur>",
      "longest a run may take: SIGKILL at its end, SIGTERM --grace before (default 10m)",
      duration,
    )
    .option(
      "--at-least <dur>",
      "hold the job this long from a run's start: fires before then do not run (default 0)",
      duration,
    )
    .option("--grace <dur>", "SIGTERM-to-SIGKILL delay (default at-most / 10, at most 10s)", duration)
    .option("--max-late <dur>", "how late a fire may still start by this replica's clock (default 10s)", duration)
    .addOption(
      new Option("--missed <policy>", "fires later than --max-late: skip, or run the latest once").choices([
        "skip",
        "run-latest",
      ]),
    )
    .addOption(
      new Option(
        "--on-crash <policy>",
        "a fire whose runner vanished: skip (report missed) or rerun (next term)",
      ).choices(["skip", "rerun"]),
    )
    .option("--identity <id>", "this replica's identity (default: HOSTNAME-PID)")
    .argument("<command...>", "the command and its arguments (after --)")
    .passThroughOptions()
    .addHelpText(
      "after",
      `
The command gets LEASEHOLD_JOB, LEASEHOLD_FIRE (the fire, ISO 8601), LEASEHOLD_TERM (the fencing
token) and LEASEHOLD_IDENTITY. Durations: 500ms, 30s, 5m, 1h. Runs until SIGINT/SIGTERM (exit
128 + N, after a command under way has exited).

Examples:
  leasehold cron --name jobs/nightly-report --schedule "0 2 * * *" --tz Europe/Paris --at-most 30m -- ./report.sh
  leasehold cron --name jobs/sync --schedule "*/10 * * * * *" --at-most 8s --store dynamodb://leases -- ./sync`,
    )
    .action(async (command: string[], opts) => {
      setExitCode(
        await cronCommand(
          {
            store: storeOf(io, opts.store),
            name: opts.name,
            schedule: opts.schedule,
            command,
            ...(opts.tz === undefined ? {} : { timezone: opts.tz }),
            ...(opts.atMost === undefined ? {} : { atMostMs: opts.atMost }),
            ...(opts.atLeast === undefined ? {} : { atLeastMs: opts.atLeast }),
            ...(opts.grace === undefined ? {} : { graceMs: opts.grace }),
            ...(opts.maxLate === undefined ? {} : { maxLateMs: opts.maxLate }),
            ...(opts.missed === undefined ? {} : { missed: opts.missed }),
            ...(opts.onCrash === undefined ? {} : { onCrash: opts.onCrash }),
            ...(opts.identity === undefined ? {} : { identity: opts.identity }),
          },
          io,
        ),
      );
    });

  program
    .command("status")
    .description("list leases under a prefix (holder, term, time to expiry), or a sharded group's buckets (--group)")
    .argument("[prefix]", "lease name prefix", "")
    .addOption(storeOption())
    .option("--group <name>", "show a sharded group: members, each bucket's owner, term and target")
    .option("--json", "print JSON (an array of leases, or the group's status object)", false)
    .action(async (prefix: string, opts) => {
      if (opts.group !== undefined && prefix !== "") {
        throw new LeaseValidationError("status arguments", [
          {
            path: "--group",
            message: `give a prefix or --group, not both (got prefix ${JSON.stringify(prefix)} and --group ${JSON.stringify(opts.group)})`,
          },
        ]);
      }
      setExitCode(
        await statusCommand(
          { store: storeOf(io, opts.store), prefix, group: opts.group, json: opts.json === true },
          io,
        ),
      );
    });

  program
    .command("watch")
    .description("print one line per change of a lease until interrupted")
    .argument("<name>", "lease name")
    .addOption(storeOption())
    .option("--json", "print one JSON object per line", false)
    .action(async (name: string, opts) => {
      setExitCode(await watchCommand({ store: storeOf(io, opts.store), name, json: opts.json === true }, io));
    });

  program
    .command("release")
    .description(
      "release a lease, only if it is held by HOLDER in TERM (compare-and-swap); or, with --force, clear a record leasehold cannot read",
    )
    .argument("<name>", "lease name")
    .option("--holder <id>", "the holder expected")
    .option(
      "--term <n>",
      "the term expected; with --force, the term a record nobody can read is cleared at",
      wholeNumber("a whole number"),
    )
    .option(
      "--force",
      "clear a record leasehold cannot read (through the API: or judge); over HTTP the token needs the verb force",
      false,
    )
    .addOption(storeOption())
    .option("--json", "print the result as JSON", false)
    .action(async (name: string, opts) => {
      setExitCode(
        await releaseCommand(
          {
            store: storeOf(io, opts.store),
            name,
            holder: opts.holder,
            term: opts.term,
            force: opts.force === true,
            json: opts.json === true,
          },
          io,
        ),
      );
    });

  program
    .command("migrate-group")
    .description(
      "move a sharded group made by leasehold 0.1.0 to this version's record names, keeping every bucket's term",
    )
    .argument("<group>", "the group name")
    .addOption(storeOption())
    .option("--max-skew-ms <ms>", "the skew bound its members ran with (default 1000)", ms, 1000)
    .option("--json", "print the result as JSON", false)
    .addHelpText(
      "after",
      `
Stop every member of the group first: it refuses while a member may still be live. It marks the
old config moved (old members can no longer plan with it), copies each bucket record free at its
term to <group>/_buckets/<i> (the next owner takes term + 1), then writes <group>/_config.`,
    )
    .action(async (group: string, opts) => {
      setExitCode(
        await migrateGroupCommand(
          { store: storeOf(io, opts.store), group, maxSkewMs: opts.maxSkewMs, json: opts.json === true },
          io,
        ),
      );
    });

  program
    .command("doctor")
    .description("check that a store keeps the lease contract (on scratch names of its own), and how fast it answers")
    .argument("<store-url>", `the store to check: ${storeUrlFormsOn("node").join(", ")}`)
    .option("--rounds <n>", "rounds of each race (default 30)", wholeNumber("a whole number of rounds", 10_000), 30)
    .option(
      "--writers <n>",
      "concurrent writers in each round (default 20)",
      wholeNumber("a number of writers", 1000),
      20,
    )
    .option("--json", "print the report as JSON", false)
    .option(
      "--prefix <prefix>",
      'write under <prefix>leasehold-doctor/<run id>/ ("" or ending in "/"; for a token scoped to it)',
      "",
    )
    .addHelpText(
      "after",
      `
Runs the store contract's safety cases (compare-and-swap, conflicts, re-sent writes, ABA, terms,
and races of concurrent writers, many rounds) under leasehold-doctor/<run id>/, measures read and
write round trips and the shortest safe leaseMs, and prints a table. The records it wrote are left
released (leasehold never deletes a lease record: terms must never restart). Over HTTP with a scoped
token, --prefix puts the run under the token's prefix. Exit status: 0 all passed, 1 a check failed.

Examples:
  leasehold doctor 's3://my-bucket/leases/?endpoint=https://minio.internal:9000&pathStyle=true'
  leasehold doctor dynamodb://leasehold-leases?region=eu-west-1 --rounds 100
  LEASEHOLD_TOKEN=... leasehold doctor https://leases.internal/ --prefix team-a/`,
    )
    .action(async (url: string, opts) => {
      if (opts.rounds < 1 || opts.writers < 2) {
        throw new LeaseValidationError("doctor options", [
          { path: opts.rounds < 1 ? "--rounds" : "--writers", message: "expected at least 1 round and 2 writers" },
        ]);
      }
      setExitCode(
        await doctorCommand(
          { store: url, rounds: opts.rounds, writers: opts.writers, json: opts.json === true, prefix: opts.prefix },
          io,
        ),
      );
    });

  program
    .command("migrate")
    .description(
      "make the storage a store needs before its first use (PostgreSQL's lease table), as a role that may run DDL",
    )
    .argument("<store-url>", "the store, e.g. postgres://admin@db.internal/app")
    .option("--print", "print the SQL instead of running it (connects to nothing)", false)
    .addHelpText(
      "after",
      `
The store makes its table on first use when its role may; run this once as a role that may, so
the application's role needs only SELECT, INSERT and UPDATE on the table (docs/postgres.md).

Examples:
  leasehold migrate postgres://admin@db.internal:5432/app
  leasehold migrate --print 'postgres://db.internal/app?schema=ops&table=leases' > leases.sql`,
    )
    .action(async (url: string, opts) => {
      setExitCode(await migrateCommand({ store: url, print: opts.print === true }, io));
    });

  program
    .command("serve")
    .description("serve the HTTP API, as npm start does (tokens from LEASEHOLD_TOKENS; flags override variables)")
    .option("--host <host>", "address to bind (default: $HOST or 127.0.0.1)")
    .option("--port <port>", "port, 0 for any free one (default: $PORT or 8787)", wholeNumber("a port 0-65535", 65535))
    .addOption(
      new Option(
        "--store <url>",
        `where leases live: ${storeUrlFormsOn("node").join(", ")} (default: $LEASEHOLD_STORE, else sqlite:$LEASEHOLD_DB, else ${DEFAULT_STORE})`,
      ),
    )
    .option("--insecure-no-auth", "serve without tokens even off loopback (as LEASEHOLD_INSECURE_NO_AUTH=1)", false)
    .option("--json", "print the listening address as JSON on stdout", false)
    .addHelpText(
      "after",
      `
Reads the same variables as npm start (README: "Server configuration"): PORT, HOST, LEASEHOLD_STORE,
LEASEHOLD_DB, LEASEHOLD_TOKENS, LEASEHOLD_INSECURE_NO_AUTH, LEASEHOLD_MAX_SKEW_MS,
LEASEHOLD_WATCH_POLL_MS, LEASEHOLD_HEARTBEAT_MS, LEASEHOLD_STORE_TIMEOUT_MS. A flag overrides its variable.`,
    )
    .action(async (opts) => {
      setExitCode(
        await serveCommand(
          {
            flags: {
              ...defined({ store: opts.store, host: opts.host, port: opts.port }),
              ...(opts.insecureNoAuth === true ? { insecureNoAuth: true } : {}),
            },
            json: opts.json === true,
          },
          io,
        ),
      );
    });

  return program;
}

/** Runs one command line; resolves to the process exit code. Never throws. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let code = 0;
  let store: ChosenStore | undefined;
  const program = buildProgram(
    io,
    (c) => {
      code = c;
    },
    (choice) => {
      store = choice;
    },
  );
  try {
    await program.parseAsync(argv, { from: "user" });
    return code;
  } catch (error) {
    // Commander already printed its message (or the help text asked for).
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : EXIT_USAGE;
    if (error instanceof InvalidArgumentError) {
      io.say(error.message);
      return EXIT_USAGE;
    }
    const auth = authFailure(error, io.env);
    if (auth !== undefined) {
      io.say(auth);
      return EXIT_USAGE;
    }
    const where =
      store && isStoreProblem(error)
        ? ` (store ${store.url}, chosen by ${store.from === "default" ? "the default" : store.from})`
        : "";
    io.say(`${errorMessage(error)}${where}`);
    return isLeaseValidationError(error) ? EXIT_USAGE : EXIT_RUNTIME;
  }
}

/** Errors about the store itself, where naming which store and what chose it helps. */
function isStoreProblem(error: unknown): boolean {
  return isLeaseStoreError(error) || isStoreUnavailableError(error) || isLeaseCorruptError(error);
}
