/**
 * A throw-away single-member etcd on 127.0.0.1 (Debian's etcd-server package: `apt-get install
 * etcd-server`), with its data in a temp folder that is removed on stop. For the handover benchmark's
 * peer comparison only.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, spawnCapturing, stopProcess } from "../../test/support/server-process.js";

export interface RunningEtcd {
  endpoint: string;
  version: string;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 15_000;

/** Starts etcd, or rejects with a message saying how to install it when the binary is missing. */
export async function startEtcd(binary = process.env.ETCD_BIN ?? "etcd"): Promise<RunningEtcd> {
  const dataDir = mkdtempSync(join(tmpdir(), "leasehold-etcd-"));
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const { child, output } = spawnCapturing(binary, [
    "--name=bench",
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=bench=${peer}`,
    "--log-level=error",
  ]);
  const cleanup = async () => {
    await stopProcess(child);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const version = await waitUntilReady(child, client, output);
    return { endpoint: client, version, stop: cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

async function waitUntilReady(child: ChildProcess, endpoint: string, output: () => string): Promise<string> {
  let failure: Error | undefined;
  child.once("error", (error: NodeJS.ErrnoException) => {
    failure =
      error.code === "ENOENT"
        ? new Error(`etcd not found (${error.message}): apt-get install etcd-server, or set ETCD_BIN`)
        : error;
  });
  child.once("exit", (code) => {
    failure ??= new Error(`etcd exited while starting (code ${code}):\n${output()}`);
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (failure) throw failure;
    try {
      const health = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(1000) });
      if (health.ok) {
        const version = (await (await fetch(`${endpoint}/version`)).json()) as { etcdserver?: string };
        return version.etcdserver ?? "unknown";
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`etcd did not answer at ${endpoint} within ${READY_TIMEOUT_MS} ms:\n${output()}`);
}
