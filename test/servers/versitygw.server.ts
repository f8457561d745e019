/**
 * versitygw (the Versity S3 gateway) as the S3 server for the S3 store's tests and benchmarks
 * (test/servers/ registry contract: `start()` resolves to `{ env: { S3_ENDPOINT }, stop }`).
 *
 * It honours `If-None-Match: *` and `If-Match` on PutObject under a per-key lock (measured: 30
 * rounds of 20 concurrent writers, one winner each), which is what the store contract needs; s3rver
 * ignores both headers, and moto has no lock around its check and write. The binary is built once
 * into `.cache/versitygw/<version>/` with `go install` (about 2-3 minutes on 2 cores, once), and
 * each start serves a fresh pair of temporary folders (POSIX backend, metadata in a sidecar folder
 * instead of xattrs) on a free loopback port. Tests create their own buckets.
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { goBinaryPath, installGoProgram } from "../support/go-install.js";
import { freePort, spawnCapturing, stopProcess } from "../support/server-process.js";
import type { StartedServer } from "./global-setup.js";

export const VERSITYGW_VERSION = "v1.8.0";
/** The gateway's single account; any region works for signing. */
export const S3_TEST_CREDENTIALS = { accessKeyId: "leasehold-test", secretAccessKey: "leasehold-test" } as const;
export const S3_TEST_REGION = "us-east-1";
const READY_TIMEOUT_MS = 20_000;

export const versitygwProgram = {
  name: "versitygw",
  installPath: "github.com/versity/versitygw/cmd/versitygw",
  version: VERSITYGW_VERSION,
  // -mod=mod: the module's go.sum is resolved as go install needs it; -p 1 keeps the build's memory low.
  env: { GOFLAGS: "-mod=mod" },
  args: ["-p", "1"],
  purpose: "the S3 tests build versitygw with it",
};
export const versitygwBinary = goBinaryPath(versitygwProgram);

export interface Versitygw extends StartedServer {
  endpoint: string;
}

/** Starts one versitygw (installing it first if needed) on empty folders and waits until it answers. */
export async function startVersitygw(): Promise<Versitygw> {
  const binary = await installGoProgram(versitygwProgram);
  const root = mkdtempSync(join(tmpdir(), "leasehold-versitygw-"));
  let lastError: unknown;
  // A port picked free can be taken before the server binds it: try a few.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const data = join(root, `data-${attempt}`);
    const meta = join(root, `meta-${attempt}`);
    mkdirSync(data);
    mkdirSync(meta);
    const { child, output } = spawnCapturing(binary, [
      "--access",
      S3_TEST_CREDENTIALS.accessKeyId,
      "--secret",
      S3_TEST_CREDENTIALS.secretAccessKey,
      "--port",
      `127.0.0.1:${port}`,
      "posix",
      "--sidecar",
      meta,
      data,
    ]);
    const endpoint = `http://127.0.0.1:${port}`;
    try {
      await waitUntilReady(child, endpoint, output);
      return {
        endpoint,
        env: { S3_ENDPOINT: endpoint },
        stop: async () => {
          await stopProcess(child);
          rmSync(root, { recursive: true, force: true });
        },
      };
    } catch (error) {
      lastError = error;
      await stopProcess(child);
    }
  }
  rmSync(root, { recursive: true, force: true });
  throw lastError;
}

async function waitUntilReady(child: ChildProcess, endpoint: string, output: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let exited = false;
  child.once("exit", () => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) throw new Error(`versitygw exited while starting (code ${child.exitCode}):\n${output()}`);
    try {
      // Unsigned: answered 403 AccessDenied, which is enough to know it serves S3.
      const response = await fetch(endpoint, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      if (response.headers.get("server") === "VERSITYGW") return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`versitygw did not answer at ${endpoint} within ${READY_TIMEOUT_MS} ms:\n${output()}`);
}

export async function start(): Promise<StartedServer> {
  const server = await startVersitygw();
  return { env: server.env, stop: server.stop };
}
