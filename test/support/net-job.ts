/**
 * The command `leasehold run` runs in the network-fault tests (test/net/cli-run.test.ts): every
 * 20 ms it appends "<CLOCK_MONOTONIC ns> 0 <LEASEHOLD_TERM> <LEASEHOLD_IDENTITY> <pid>" to LOG, the
 * work-log format of test/support/process-cluster.ts, until it is stopped (SIGTERM or SIGKILL
 * from the wrapper or its guard). It checks nothing itself: stopping it in time is the wrapper's.
 *
 *   node --import tsx net-job.ts <log>
 */
import { closeSync, openSync, writeSync } from "node:fs";

const log = openSync(process.argv[2]!, "a");
const line = `0 ${process.env.LEASEHOLD_TERM} ${process.env.LEASEHOLD_IDENTITY} ${process.pid}\n`;
setInterval(() => writeSync(log, `${process.hrtime.bigint()} ${line}`), 20);
process.on("SIGTERM", () => {
  closeSync(log);
  process.exit(0);
});
