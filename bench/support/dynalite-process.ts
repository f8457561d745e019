/** dynalite as its own process on 127.0.0.1 (bench/replicas, bench/follower-reads). */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { freePort, stopProcess } from "../../test/support/server-process.js";
import { sleep } from "./common.js";

/** dynalite in its own process, so 10,000 reads a second do not share the bench's event loop. */
export async function startDynaliteProcess(): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const cli = join(import.meta.dirname, "..", "..", "node_modules", "dynalite", "cli.js");
  const child: ChildProcess = spawn(
    process.execPath,
    [cli, "--host", "127.0.0.1", "--port", String(port), "--createTableMs", "0"],
    { stdio: "ignore" },
  );
  const endpoint = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await fetch(endpoint);
      break;
    } catch (error) {
      if (i > 100) throw error;
      await sleep(100);
    }
  }
  return { endpoint, stop: () => stopProcess(child) };
}
