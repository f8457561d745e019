/**
 * The `leasehold` executable's entry (bin/leasehold.js loads it). Node-bound: passes the real
 * environment and streams to `runCli` and exits with the code it returns.
 */
import { runCli } from "./program.js";

const code = await runCli(process.argv.slice(2), {
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  say: (line) => process.stderr.write(`leasehold: ${line}\n`),
});
// Stores and timers may hold the event loop open; the command is done.
process.exit(code);
