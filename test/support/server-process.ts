/**
 * What every locally started server needs (fake-gcs-server, versitygw and azurite in tests, etcd
 * in the benchmarks, wrangler dev): a free loopback port, the tail of its output for error
 * messages, waiting until it answers, and a stop that escalates to SIGKILL.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";

/** A port free on 127.0.0.1 right now (another process may still take it before it is bound). */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Spawns `binary` with stdout and stderr captured; `output()` is their last 8 KiB. */
export function spawnCapturing(binary: string, args: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8192);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return { child, output: () => output };
}

/** SIGTERM, then SIGKILL after 3 s; resolves once the process has exited. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts a server on a free loopback port and waits until `ready(port)` resolves true. A port
 * picked free can be taken before the server binds it, so a server that exits or never answers is
 * stopped and tried again on another port (3 attempts); the last failure carries its own output.
 * `ready` may throw while the server is not listening yet.
 */
export async function startOnFreePort(
  what: string,
  launch: (port: number, attempt: number) => { child: ChildProcess; output: () => string },
  ready: (port: number) => Promise<boolean>,
  timeoutMs = 20_000,
): Promise<{ child: ChildProcess; port: number }> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const { child, output } = launch(port, attempt);
    try {
      await waitUntilReady(`${what} on 127.0.0.1:${port}`, child, output, () => ready(port), timeoutMs);
      return { child, port };
    } catch (error) {
      lastError = error;
      await stopProcess(child);
    }
  }
  throw lastError;
}

async function waitUntilReady(
  what: string,
  child: ChildProcess,
  output: () => string,
  ready: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  child.once("exit", () => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${what} exited while starting (code ${child.exitCode}):\n${output()}`);
    try {
      if (await ready()) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not answer within ${timeoutMs} ms:\n${output()}`);
}
