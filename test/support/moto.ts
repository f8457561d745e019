/**
 * moto's S3 server (PyPI `moto[server]`, pinned with everything it pulls in by
 * moto.requirements.txt), installed once into `.cache/moto/` (test/support/python-venv.ts) and
 * started on a free loopback port. Its conditional PutObject checks `If-None-Match` / `If-Match`
 * and then writes, without a lock between the two: two concurrent writers can both be told they
 * won. Not a test server (the store refuses nothing about it that a test could rely on): the
 * benchmark bench/doctor-moto.bench.ts measures how often `leasehold doctor` catches that race.
 */
import { join } from "node:path";
import { installPythonTool } from "./python-venv.js";
import { spawnCapturing, startOnFreePort, stopProcess } from "./server-process.js";

export const MOTO_VERSION = "5.2.5";

export interface Moto {
  endpoint: string;
  stop(): Promise<void>;
}

export async function startMoto(): Promise<Moto> {
  const python = await installPythonTool({
    name: "moto",
    version: MOTO_VERSION,
    requirements: join(import.meta.dirname, "moto.requirements.txt"),
    neededBy: "the doctor-vs-moto benchmark runs",
  });
  const { child, port } = await startOnFreePort(
    "moto_server",
    (port) => spawnCapturing(python, ["-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)]),
    async (port) => {
      const response = await fetch(`http://127.0.0.1:${port}/moto-api/`, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      return response.ok;
    },
    60_000,
  );
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => stopProcess(child) };
}
