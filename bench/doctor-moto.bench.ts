/**
 * How often `leasehold doctor` catches a racy S3 server: moto's `moto_server`
 * (test/support/moto.ts), whose conditional PutObject checks `If-None-Match` / `If-Match` and
 * then writes with no lock between the two, so two concurrent writers are now and then both told
 * they won. Each run is the command itself (`doctorCommand`, JSON output) on a scratch prefix of a
 * fresh moto: every safety case, the two races included (each writer on a client of its own, a
 * warm-up read, one barrier: src/testkit/safety-cases.ts). A run "caught" moto when a race case
 * failed. From the round each failing race stopped at, the table also estimates the chance that one
 * round of one race shows two winners, and what that predicts for other round counts.
 *
 * Moto is slow (tens of requests per second on a busy machine) and its race depends on when
 * Python switches threads, so load moves the figures: the note gives the load.
 *
 * A race case can also fail another way: moto answering 500 or too slowly (doctor's 10 s timeout)
 * under many writers, which doctor reports as a loser's failure; those runs are counted apart.
 *
 *   DOCTOR_MOTO_SETTINGS=30x20x30,100x20x8 (rounds x writers x runs, one setting each)
 */
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { type DoctorReport, doctorCommand } from "../src/cli/doctor.js";
import { MOTO_VERSION, startMoto } from "../test/support/moto.js";
import { machineLoad, QUICK } from "./support/common.js";
import { median, type Table } from "./table.js";

const SETTINGS = (process.env.DOCTOR_MOTO_SETTINGS ?? (QUICK ? "5x20x2" : "30x20x30,100x20x8,30x5x30"))
  .split(",")
  .map((s) => {
    const [rounds, writers, runs] = s.split("x").map(Number);
    if (![rounds, writers, runs].every(Number.isInteger)) throw new Error(`DOCTOR_MOTO_SETTINGS: bad "${s}"`);
    return { rounds: rounds as number, writers: writers as number, runs: runs as number };
  });
const RACES = ["concurrent creates", "concurrent compare-and-swaps"];
const credentials = { accessKeyId: "test", secretAccessKey: "test" };

interface Run {
  /** A race saw two writers told they won. */
  caught: boolean;
  /** A race failed otherwise (moto's 500s, timeouts). */
  otherFailure: boolean;
  /** Rounds each race ran (to its first failure, or all of them) and whether two writers won. */
  races: Array<{ rounds: number; twoWinners: boolean }>;
  seconds: number;
}

async function doctorRun(url: string, rounds: number, writers: number): Promise<Run> {
  const out: string[] = [];
  const started = performance.now();
  await doctorCommand(
    { store: url, rounds, writers, json: true },
    { env: process.env, out: (l) => out.push(l), say: () => {} },
  );
  const report = JSON.parse(out.join("\n")) as DoctorReport;
  const raceCases = report.cases.filter((c) => RACES.some((r) => c.name.startsWith(r)));
  const twoWinners = (detail: string) => /writers were told they won/.test(detail);
  const races = raceCases.map((c) => {
    const stopped = /, round (\d+)/.exec(c.detail);
    return { rounds: stopped ? Number(stopped[1]) : rounds, twoWinners: twoWinners(c.detail) };
  });
  const others = report.cases.filter((c) => !c.ok && !raceCases.includes(c));
  if (others.length > 0) {
    throw new Error(`moto failed a case other than the races: ${others.map((c) => c.detail).join("; ")}`);
  }
  return {
    caught: races.some((r) => r.twoWinners),
    otherFailure: raceCases.some((c) => !c.ok && !twoWinners(c.detail)),
    races,
    seconds: (performance.now() - started) / 1000,
  };
}

/** The Wilson score interval (95 %) of k successes in n trials, in percent. */
function wilson(k: number, n: number): string {
  const z = 1.96;
  const p = k / n;
  const centre = (p + (z * z) / (2 * n)) / (1 + (z * z) / n);
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / (1 + (z * z) / n);
  return `${Math.max(0, 100 * (centre - half)).toFixed(0)}-${Math.min(100, 100 * (centre + half)).toFixed(0)} %`;
}

export async function run(): Promise<Table[]> {
  // The AWS SDK reads credentials from the process environment; moto accepts any.
  process.env.AWS_ACCESS_KEY_ID ??= credentials.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY ??= credentials.secretAccessKey;
  const moto = await startMoto();
  const loadBefore = machineLoad();
  const rows: Table["rows"] = [];
  try {
    const admin = new S3Client({ endpoint: moto.endpoint, region: "us-east-1", forcePathStyle: true, credentials });
    await admin.send(new CreateBucketCommand({ Bucket: "doctor-bench" }));
    admin.destroy();
    for (const { rounds, writers, runs: count } of SETTINGS) {
      const runs: Run[] = [];
      for (let i = 0; i < count; i++) {
        const url = `s3://doctor-bench/r${rounds}w${writers}-${i}/?region=us-east-1&pathStyle=true&endpoint=${encodeURIComponent(moto.endpoint)}`;
        const done = await doctorRun(url, rounds, writers);
        runs.push(done);
        const outcome = done.caught ? "caught" : done.otherFailure ? "failed otherwise" : "passed";
        process.stderr.write(
          `doctor vs moto ${rounds}x${writers}: run ${i + 1}/${count} ${outcome}, ${machineLoad()}\n`,
        );
      }
      const caught = runs.filter((r) => r.caught).length;
      // Rounds a race ran before it stopped on two winners (or all of them): one chance per round.
      const races = runs.flatMap((r) => r.races);
      const lost = races.filter((r) => r.twoWinners).length;
      const raced = races.reduce((n, r) => n + r.rounds, 0);
      // No round lost: the estimate 0 would predict that no run ever catches it. Say instead what
      // the rounds rule out: the per-round chance's 95 % upper bound, and the predictions it bounds.
      const perRound = lost > 0 ? lost / raced : 1 - 0.05 ** (1 / raced);
      const bound = lost > 0 ? "" : "< ";
      const predicted = (n: number) => `${bound}${(100 * (1 - (1 - perRound) ** (2 * n))).toFixed(0)} %`;
      rows.push([
        `--rounds ${rounds} --writers ${writers}`,
        count,
        caught,
        `${((100 * caught) / count).toFixed(0)} % (${wilson(caught, count)})`,
        runs.filter((r) => r.otherFailure && !r.caught).length,
        `${lost} of ${raced}: ${bound}${(100 * perRound).toFixed(2)} %`,
        `${predicted(30)} / ${predicted(100)} / ${predicted(300)}`,
        median(runs.map((r) => r.seconds)),
      ]);
    }
  } finally {
    await moto.stop();
  }
  return [
    {
      title: `leasehold doctor against moto ${MOTO_VERSION} (an S3 server that checks and writes without a lock)`,
      note: `Each run: \`leasehold doctor s3://...?endpoint=<moto>\` on a fresh prefix, every safety case; "caught" = a race case saw two writers told they won (95 % Wilson interval). Per round: rounds that saw two winners of the rounds the races ran (none seen: the 95 % upper bound, "<", and the predictions it bounds); "failed otherwise": a race stopped on a 500 or a timeout of moto's instead. Load: ${loadBefore} before, ${machineLoad()} after.`,
      columns: [
        "doctor options",
        "runs",
        "caught",
        "detection rate",
        "failed otherwise",
        "two winners per round of a race",
        "predicted for 30 / 100 / 300 rounds",
        "median run (s)",
      ],
      rows,
    },
  ];
}
