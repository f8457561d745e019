/**
 * azurite (Microsoft's Azure Storage emulator, npm, pinned 3.35.0: the last release for Node 20) as
 * the Blob server for the Azure Blob store's tests and benchmarks (test/servers/ registry
 * contract: `start()` resolves to `{ env: { AZURE_BLOB_ENDPOINT, AZURE_BLOB_CONNECTION_STRING }, stop }`).
 *
 * Only the blob service, in memory, on a free loopback port, as a child process of the locally
 * installed package. It honours `If-Match` and `If-None-Match: *` on Put Blob (measured: 30 rounds
 * of 20 concurrent writers, one winner each). `--loose` ignores headers it does not know and
 * `--skipApiVersionCheck` accepts the SDK's newer API version. Tests create their own containers.
 */
import { join, resolve } from "node:path";
import { spawnCapturing, startOnFreePort, stopProcess } from "../support/server-process.js";
import type { StartedServer } from "./global-setup.js";

/** azurite's well-known development account (public, documented by Microsoft). */
export const AZURITE_ACCOUNT = "devstoreaccount1";
export const AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const binary = join(resolve(import.meta.dirname, "../.."), "node_modules", ".bin", "azurite-blob");

export interface Azurite extends StartedServer {
  /** The account's blob endpoint, e.g. http://127.0.0.1:PORT/devstoreaccount1. */
  endpoint: string;
  connectionString: string;
}

/** A connection string for the development account at `blobEndpoint`. */
export function azuriteConnectionString(blobEndpoint: string): string {
  return `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};BlobEndpoint=${blobEndpoint};`;
}

export async function startAzurite(): Promise<Azurite> {
  const { child, port } = await startOnFreePort(
    "azurite",
    (port) =>
      spawnCapturing(binary, [
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        String(port),
        "--inMemoryPersistence",
        "--disableTelemetry",
        "--skipApiVersionCheck",
        "--loose",
        "--silent",
      ]),
    async (port) => {
      // Any answer (400 for a request without an account) means it is listening.
      const response = await fetch(`http://127.0.0.1:${port}`, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      return true;
    },
  );
  const endpoint = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  const connectionString = azuriteConnectionString(endpoint);
  return {
    endpoint,
    connectionString,
    env: { AZURE_BLOB_ENDPOINT: endpoint, AZURE_BLOB_CONNECTION_STRING: connectionString },
    stop: () => stopProcess(child),
  };
}

export async function start(): Promise<StartedServer> {
  const server = await startAzurite();
  return { env: server.env, stop: server.stop };
}
