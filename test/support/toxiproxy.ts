/**
 * Shopify's Toxiproxy (a TCP proxy made for fault injection) for the network-fault tests and the
 * WAN bench: the pinned server built once into `.cache/toxiproxy-server/<version>/` with `go install`
 * (as versitygw is), started on 127.0.0.1, and a small typed client of its HTTP API (POST /proxies,
 * toxics per proxy). One proxy per candidate, so one process can be cut off alone.
 *
 * What the tests call a fault, in Toxiproxy's terms (docs/partitions.md, "How the faults are made"):
 * - partition "refused": the proxy disabled: its open connections are closed and new ones refused,
 *   what a peer whose host is reachable but whose service is gone looks like;
 * - partition "blackhole": a `timeout` toxic (timeout 0) on both directions: connections are
 *   accepted and every byte is dropped, nothing is ever answered or closed, as behind a firewall
 *   that drops packets or a NAT that forgot the flow;
 * - half-open: `timeout`, `reset_peer` or `limit_data` on the answer (downstream) only: the request
 *   arrives and is acted on, the answer never comes back, is reset, or is cut short;
 * - latency storms (`latency` with `jitter`) and slow links (`bandwidth`), on either direction.
 * Toxiproxy has no per-packet loss: a lost packet on TCP is a retransmission, which is latency.
 */

import { type GoProgram, goBinaryPath, installGoProgram } from "./go-install.js";
import { spawnCapturing, startOnFreePort, stopProcess } from "./server-process.js";

export const TOXIPROXY_VERSION = "v2.12.0";

export const toxiproxyProgram: GoProgram = {
  name: "toxiproxy-server",
  installPath: "github.com/Shopify/toxiproxy/v2/cmd/server",
  built: "server",
  version: TOXIPROXY_VERSION,
  env: { GOFLAGS: "-mod=mod" },
  args: ["-p", "1"],
  purpose: "the network-fault tests and the WAN bench inject faults with Toxiproxy, built with it",
};
export const toxiproxyBinary = goBinaryPath(toxiproxyProgram);

/** Toxiproxy's toxic types with their attributes (times in ms, rate in KB/s). */
export type ToxicKind =
  | { type: "latency"; attributes: { latency: number; jitter?: number } }
  | { type: "bandwidth"; attributes: { rate: number } }
  | { type: "timeout"; attributes: { timeout: number } }
  | { type: "reset_peer"; attributes: { timeout: number } }
  | { type: "limit_data"; attributes: { bytes: number } }
  | { type: "slow_close"; attributes: { delay: number } }
  | { type: "slicer"; attributes: { average_size: number; size_variation: number; delay: number } };

export type Toxic = ToxicKind & {
  /** Default `<type>_<stream>`. */
  name?: string;
  /** "upstream": client to server (the request); "downstream": server to client (the answer). */
  stream: "upstream" | "downstream";
  /** The share of connections it applies to, 0-1 (default 1). */
  toxicity?: number;
};

/** The kinds of cut a test makes (see the header). */
export type PartitionKind = "refused" | "blackhole";

export class ToxiproxyError extends Error {
  override name = "ToxiproxyError";
}

/** The HTTP API of one toxiproxy-server. */
export class Toxiproxy {
  constructor(readonly apiUrl: string) {}

  /** A proxy listening on a free loopback port in front of `upstream` ("host:port" or a URL). */
  async createProxy(name: string, upstream: string): Promise<ToxiProxy> {
    const target = upstream.includes("://") ? new URL(upstream).host : upstream;
    const created = (await this.call("POST", "/proxies", {
      name,
      listen: "127.0.0.1:0",
      upstream: target,
      enabled: true,
    })) as { listen: string };
    return new ToxiProxy(this, name, created.listen);
  }

  /** The server's version (it answers: it is up). */
  async version(): Promise<string> {
    const res = await fetch(`${this.apiUrl}/version`, { signal: AbortSignal.timeout(2000) });
    return (await res.text()).trim();
  }

  /** @internal one API call; throws with the server's own message on a non-2xx answer. */
  async call(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${this.apiUrl}${path}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
      signal: AbortSignal.timeout(5000),
    });
    const text = await res.text();
    if (!res.ok) throw new ToxiproxyError(`toxiproxy ${method} ${path}: ${res.status} ${text}`);
    return text === "" ? undefined : JSON.parse(text);
  }
}

/** One proxy: where it listens, and its toxics and state. */
export class ToxiProxy {
  private readonly cuts = new Map<PartitionKind, string[]>();

  constructor(
    private readonly api: Toxiproxy,
    readonly name: string,
    /** "127.0.0.1:<port>" */
    readonly listen: string,
  ) {}

  /** `http://127.0.0.1:<port>`: the upstream's URL as its client should use it through this proxy. */
  get url(): string {
    return `http://${this.listen}`;
  }

  get port(): number {
    return Number(this.listen.split(":").at(-1));
  }

  private get path(): string {
    return `/proxies/${encodeURIComponent(this.name)}`;
  }

  /** Adds a toxic; returns its name (for `removeToxic`). */
  async addToxic(toxic: Toxic): Promise<string> {
    const created = (await this.api.call("POST", `${this.path}/toxics`, { toxicity: 1, ...toxic })) as {
      name: string;
    };
    return created.name;
  }

  async removeToxic(name: string): Promise<void> {
    await this.api.call("DELETE", `${this.path}/toxics/${encodeURIComponent(name)}`);
  }

  /** Removes every toxic of this proxy and enables it. */
  async heal(): Promise<void> {
    const toxics = (await this.api.call("GET", `${this.path}/toxics`)) as Array<{ name: string }>;
    for (const t of toxics) await this.removeToxic(t.name);
    await this.setEnabled(true);
    this.cuts.clear();
  }

  /** "refused": disabled (connections closed, new ones refused); "blackhole": every byte dropped, both ways. */
  async partition(kind: PartitionKind): Promise<void> {
    if (kind === "refused") {
      await this.setEnabled(false);
      this.cuts.set(kind, []);
      return;
    }
    const names = [
      await this.addToxic({ name: "cut-up", type: "timeout", stream: "upstream", attributes: { timeout: 0 } }),
      await this.addToxic({ name: "cut-down", type: "timeout", stream: "downstream", attributes: { timeout: 0 } }),
    ];
    this.cuts.set(kind, names);
  }

  async setEnabled(enabled: boolean): Promise<void> {
    await this.api.call("POST", this.path, { enabled });
  }

  async delete(): Promise<void> {
    await this.api.call("DELETE", this.path);
  }
}

export interface ToxiproxyServer {
  api: Toxiproxy;
  stop(): Promise<void>;
}

/** Starts toxiproxy-server (installing it first if needed) on a free loopback port. */
export async function startToxiproxy(): Promise<ToxiproxyServer> {
  const binary = await installGoProgram(toxiproxyProgram);
  const { child, port } = await startOnFreePort(
    "toxiproxy-server",
    (port) => spawnCapturing(binary, ["-host", "127.0.0.1", "-port", String(port)]),
    async (port) => (await fetch(`http://127.0.0.1:${port}/version`, { signal: AbortSignal.timeout(1000) })).ok,
  );
  return { api: new Toxiproxy(`http://127.0.0.1:${port}`), stop: () => stopProcess(child) };
}

/** The server the test run started (test/servers/toxiproxy.server.ts sets TOXIPROXY_URL). */
export function testToxiproxy(): Toxiproxy {
  const url = process.env.TOXIPROXY_URL;
  if (!url) throw new Error("TOXIPROXY_URL is not set: run the tests with vitest (test/servers/global-setup.ts)");
  return new Toxiproxy(url);
}

/** A proxy name no other test file uses: `<what>-<time>-<random>`. */
export function uniqueProxyName(what: string): string {
  return `${what}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
}
