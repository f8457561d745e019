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

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { goBinaryPath, installGoProgram } from "../support/go-install.js";
import { spawnCapturing, startOnFreePort, stopProcess } from "../support/server-process.js";
import type { StartedServer } from "./global-setup.js";

export const VERSITYGW_VERSION = "v1.8.0";
/** The gateway's single account; any region works for signing. */
export const S3_TEST_CREDENTIALS = { accessKeyId: "leasehold-test", secretAccessKey: "leasehold-test" } as const;
export const S3_TEST_REGION = "us-east-1";

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

/** An S3 client for the gateway at `endpoint`: path-style, the test account, SDK attempts as given. */
export function s3TestClient(endpoint: string, maxAttempts?: number): S3Client {
  return new S3Client({
    endpoint,
    region: S3_TEST_REGION,
    forcePathStyle: true,
    credentials: S3_TEST_CREDENTIALS,
    ...(maxAttempts === undefined ? {} : { maxAttempts }),
  });
}

/** Creates a fresh bucket named `<prefix>-<time>-<random>` on the gateway at `endpoint`; returns its name. */
export async function createTestBucket(endpoint: string, prefix: string): Promise<string> {
  const bucket = `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
  const admin = s3TestClient(endpoint);
  try {
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    admin.destroy();
  }
  return bucket;
}

export interface Versitygw extends StartedServer {
  endpoint: string;
}

/** Starts one versitygw (installing it first if needed) on empty folders and waits until it answers. */
export async function startVersitygw(): Promise<Versitygw> {
  const binary = await installGoProgram(versitygwProgram);
  const root = mkdtempSync(join(tmpdir(), "leasehold-versitygw-"));
  try {
    const { child, port } = await startOnFreePort(
      "versitygw",
      (port, attempt) => {
        const data = join(root, `data-${attempt}`);
        const meta = join(root, `meta-${attempt}`);
        mkdirSync(data);
        mkdirSync(meta);
        return spawnCapturing(binary, [
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
      },
      async (port) => {
        // Unsigned: answered 403 AccessDenied, which is enough to know it serves S3.
        const response = await fetch(`http://127.0.0.1:${port}`, { signal: AbortSignal.timeout(1000) });
        await response.arrayBuffer();
        return response.headers.get("server") === "VERSITYGW";
      },
    );
    const endpoint = `http://127.0.0.1:${port}`;
    return {
      endpoint,
      env: { S3_ENDPOINT: endpoint },
      stop: async () => {
        await stopProcess(child);
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

export async function start(): Promise<StartedServer> {
  const server = await startVersitygw();
  return { env: server.env, stop: server.stop };
}
