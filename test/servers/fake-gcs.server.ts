/**
 * fake-gcs-server for the GCS store's tests and benchmark (test/servers/ registry contract:
 * `start()` resolves to `{ env: { GCS_ENDPOINT }, stop }`).
 *
 * The binary is built once into `.cache/fake-gcs-server/<version>/` with `go install` when
 * missing (quiet on success, the whole build log on failure), so a fresh CI machine needs only
 * Go >= 1.25. Each start binds 127.0.0.1 on a free port with the in-memory backend and creates
 * nothing: tests create their own buckets.
 */
import type { ChildProcess } from "node:child_process";
import { goBinaryPath, installGoProgram } from "../support/go-install.js";
import { freePort, spawnCapturing, stopProcess } from "../support/server-process.js";
import type { StartedServer } from "./global-setup.js";

export const FAKE_GCS_MODULE = "github.com/fsouza/fake-gcs-server";
export const FAKE_GCS_VERSION = "v1.55.1";
const READY_TIMEOUT_MS = 20_000;

const program = {
  name: "fake-gcs-server",
  installPath: FAKE_GCS_MODULE,
  version: FAKE_GCS_VERSION,
  purpose: "the GCS tests build fake-gcs-server with it",
};
export const fakeGcsBinary = goBinaryPath(program);

/** Builds the pinned fake-gcs-server unless it is already cached; returns the binary's path. */
export function installFakeGcs(): Promise<string> {
  return installGoProgram(program);
}

export interface FakeGcs extends StartedServer {
  endpoint: string;
}

/** Starts one fake-gcs-server (installing it first if needed) and waits until it answers. */
export async function startFakeGcs(): Promise<FakeGcs> {
  const binary = await installFakeGcs();
  let lastError: unknown;
  // A port picked free can be taken before the server binds it: try a few.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const { child, output } = spawnCapturing(binary, [
      "-scheme",
      "http",
      "-host",
      "127.0.0.1",
      "-port",
      String(port),
      "-backend",
      "memory",
      "-log-level",
      "error",
    ]);
    const endpoint = `http://127.0.0.1:${port}`;
    try {
      await waitUntilReady(child, endpoint, output);
      return { endpoint, env: { GCS_ENDPOINT: endpoint }, stop: () => stopProcess(child) };
    } catch (error) {
      lastError = error;
      await stopProcess(child);
    }
  }
  throw lastError;
}

async function waitUntilReady(child: ChildProcess, endpoint: string, output: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let exited = false;
  child.once("exit", () => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) throw new Error(`fake-gcs-server exited while starting (code ${child.exitCode}):\n${output()}`);
    try {
      const response = await fetch(`${endpoint}/storage/v1/b?project=leasehold-test`, {
        signal: AbortSignal.timeout(1000),
      });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`fake-gcs-server did not answer at ${endpoint} within ${READY_TIMEOUT_MS} ms:\n${output()}`);
}

export async function start(): Promise<StartedServer> {
  const server = await startFakeGcs();
  return { env: server.env, stop: server.stop };
}
