/**
 * The command the CLI tests run under `leasehold run`. Appends one line per event to LOG:
 *   "<LEASEHOLD_IDENTITY> <LEASEHOLD_TERM> <start|stop|sigterm-ignored> <wall ms> <lease>"
 * Modes (argv after LOG):
 *   sleep        run until SIGTERM, then log "stop" and exit 0
 *   exit N       log start, then exit with status N (after logging "stop")
 *   stubborn     like sleep, but ignore SIGTERM (the wrapper must SIGKILL after its grace period)
 *   killself     log start, then die by SIGKILL
 */
import { appendFileSync } from "node:fs";

const [log, mode, arg] = process.argv.slice(2);
const identity = process.env.LEASEHOLD_IDENTITY ?? "?";
const term = process.env.LEASEHOLD_TERM ?? "?";
const lease = process.env.LEASEHOLD_LEASE ?? "?";
const line = (event: string) => appendFileSync(log!, `${identity} ${term} ${event} ${Date.now()} ${lease}\n`);

line("start");
if (mode === "exit") {
  line("stop");
  process.exit(Number(arg));
} else if (mode === "killself") {
  process.kill(process.pid, "SIGKILL");
} else {
  process.on("SIGTERM", () => {
    if (mode === "stubborn") return line("sigterm-ignored");
    line("stop");
    process.exit(0);
  });
  setInterval(() => undefined, 60_000);
}
