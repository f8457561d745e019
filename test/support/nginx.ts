/**
 * nginx from Debian for the key-affinity routing test and bench (examples/key-affinity/nginx.conf):
 * the package's binary extracted into `.cache/nginx/<version>/` with `apt-get download` and
 * `dpkg-deb -x`, so nothing is installed system-wide and no nginx service is started; then run in
 * the foreground on a free loopback port with the example configuration, its upstream servers
 * replaced by the test's replicas.
 */
import { type ChildProcess, execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { installFolder } from "./cache-folder.js";
import { spawnCapturing, startOnFreePort, stopProcess } from "./server-process.js";

const run = promisify(execFile);
const projectRoot = resolve(import.meta.dirname, "../..");
/** Debian bookworm's nginx (the security update), as `apt-get download` fetches it. */
export const NGINX_VERSION = "1.22.1";
export const EXAMPLE_CONFIG = join(projectRoot, "examples", "key-affinity", "nginx.conf");

/** The nginx binary, extracted from Debian's package unless cached. */
export async function installNginx(): Promise<string> {
  const dir = join(projectRoot, ".cache", "nginx", NGINX_VERSION);
  const binary = join(dir, "usr", "sbin", "nginx");
  if (existsSync(binary)) return binary;
  await installFolder(dir, async (staging) => {
    const download = () => run("apt-get", ["download", "nginx"], { cwd: staging });
    // A fresh machine may have no package lists yet.
    await download().catch(async () => {
      await run("apt-get", ["update"]);
      await download();
    });
    const deb = readdirSync(staging).find((f) => f.startsWith(`nginx_${NGINX_VERSION}`) && f.endsWith(".deb"));
    if (!deb) {
      throw new Error(
        `apt-get download nginx did not fetch nginx ${NGINX_VERSION}: ${readdirSync(staging).join(", ")}`,
      );
    }
    await run("dpkg-deb", ["-x", join(staging, deb), staging]);
    rmSync(join(staging, deb));
  }).catch((error: unknown) => {
    throw new Error(`installing nginx ${NGINX_VERSION} from Debian failed: ${(error as Error).message}`, {
      cause: error,
    });
  });
  return binary;
}

export interface RunningNginx {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** The example configuration with `upstreams` (host:port) as its servers, on a free loopback port. */
export async function startNginx(upstreams: string[]): Promise<RunningNginx> {
  const binary = await installNginx();
  const prefix = mkdtempSync(join(tmpdir(), "leasehold-nginx-"));
  mkdirSync(join(prefix, "logs"));
  const example = readFileSync(EXAMPLE_CONFIG, "utf8");
  const { child, port } = await startOnFreePort(
    "nginx",
    (p) => {
      // The example's three `server 10.0.0.x:8787 <options>;` lines become one per replica, same options.
      const config = example
        .replace(/(?:^( *)server 10\.0\.0\.\d+:8787 (.*)\n)+/m, (_all, indent: string, options: string) =>
          upstreams.map((u) => `${indent}server ${u} ${options}\n`).join(""),
        )
        .replace(/^( *)listen 8080;$/m, `$1listen 127.0.0.1:${p};`)
        // Debian's build keeps its temporary files and logs under /var: this instance's own folder instead.
        .replace(
          /^http \{$/m,
          `http {\n${["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `  ${t}_temp_path ${join(prefix, t)};`).join("\n")}\n  access_log off;`,
        );
      writeFileSync(join(prefix, "nginx.conf"), config);
      const args = [
        "-p",
        prefix,
        "-c",
        join(prefix, "nginx.conf"),
        "-g",
        `daemon off; pid ${join(prefix, "nginx.pid")};`,
      ];
      const { child: spawned, output } = spawnCapturing(binary, args);
      return { child: spawned, output: () => `${output()}${readLog(prefix)}` };
    },
    async (p) => (await fetch(`http://127.0.0.1:${p}/healthz`)).status > 0,
  );
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    stop: async () => {
      await stopProcess(child);
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}

function readLog(prefix: string): string {
  try {
    return readFileSync(join(prefix, "logs", "error.log"), "utf8").slice(-4096);
  } catch {
    return "";
  }
}
