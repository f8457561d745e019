/**
 * API replicas as users run them: `npm start`'s entry (src/runtime/node.ts, under tsx) in separate
 * OS processes, all over one store URL, each on its own loopback port; and a client-side fetch
 * that sends each request to the first replica that accepts the connection, as a load balancer or
 * a DNS name with several addresses would, so a client moves on when its replica dies.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { startOnFreePort, stopProcess } from "./server-process.js";

const projectRoot = resolve(import.meta.dirname, "../..");

export interface Replica {
  name: string;
  url: string;
  port: number;
  child: ChildProcess;
  /** What the process printed (its start-up line, errors). */
  output(): string;
  stop(): Promise<void>;
}

/** Starts `npm start`'s entry with `env` (LEASEHOLD_STORE and the rest) on a free port. */
export async function startReplica(
  name: string,
  env: Record<string, string>,
  entry = join(projectRoot, "src", "runtime", "node.ts"),
): Promise<Replica> {
  let output = "";
  const { child, port } = await startOnFreePort(
    `replica ${name}`,
    (p) => {
      const spawned = spawn(process.execPath, ["--import", "tsx", entry], {
        cwd: projectRoot,
        env: {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? "/tmp",
          HOST: "127.0.0.1",
          PORT: String(p),
          AWS_REGION: "us-east-1",
          AWS_ACCESS_KEY_ID: "leasehold-test",
          AWS_SECRET_ACCESS_KEY: "leasehold-test",
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
          ...env,
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const keep = (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-16_384);
      };
      spawned.stdout?.on("data", keep);
      spawned.stderr?.on("data", keep);
      return { child: spawned, output: () => output };
    },
    async (p) => (await fetch(`http://127.0.0.1:${p}/healthz`)).ok,
    60_000,
  );
  return { name, url: `http://127.0.0.1:${port}`, port, child, output: () => output, stop: () => stopProcess(child) };
}

/**
 * A fetch that sends each request to the first of `replicas` (in order) that accepts the
 * connection: the URL's origin is replaced by that replica's. `served` records which one answered.
 */
export function failoverFetch(replicas: () => Replica[], served: string[] = []): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    let lastError: unknown;
    for (const replica of replicas()) {
      const target = new URL(url.pathname + url.search, replica.url);
      try {
        const response = await fetch(target, init);
        served.push(replica.name);
        return response;
      } catch (error) {
        // Refused or reset before any answer: that replica is gone, try the next.
        if ((init?.signal as AbortSignal | undefined)?.aborted) throw error;
        lastError = error;
      }
    }
    throw lastError;
  }) as typeof fetch;
}
