/**
 * fake-gcs-server for the GCS store's tests and benchmark (test/servers/ registry contract:
 * `start()` resolves to `{ env: { GCS_ENDPOINT }, stop }`).
 *
 * The binary is built once into `.cache/fake-gcs-server/<version>/` with `go install` when
 * missing (quiet on success, the whole build log on failure), so a fresh CI machine needs only
 * Go >= 1.25. Each start binds 127.0.0.1 on a free port with the in-memory backend and creates
 * nothing: tests create their own buckets.
 */
import { goBinaryPath, installGoProgram } from "../support/go-install.js";
import { spawnCapturing, startOnFreePort, stopProcess } from "../support/server-process.js";
import type { StartedServer } from "./global-setup.js";

export const FAKE_GCS_MODULE = "github.com/fsouza/fake-gcs-server";
export const FAKE_GCS_VERSION = "v1.55.1";

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
  const { child, port } = await startOnFreePort(
    "fake-gcs-server",
    (port) =>
      spawnCapturing(binary, [
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
      ]),
    async (port) => {
      const response = await fetch(`http://127.0.0.1:${port}/storage/v1/b?project=leasehold-test`, {
        signal: AbortSignal.timeout(1000),
      });
      await response.arrayBuffer();
      return response.ok;
    },
  );
  const endpoint = `http://127.0.0.1:${port}`;
  return { endpoint, env: { GCS_ENDPOINT: endpoint }, stop: () => stopProcess(child) };
}

export async function start(): Promise<StartedServer> {
  const server = await startFakeGcs();
  return { env: server.env, stop: server.stop };
}
