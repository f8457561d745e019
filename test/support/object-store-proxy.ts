/**
 * An HTTP proxy on 127.0.0.1 in front of versitygw (S3) or azurite (Azure Blob) that counts
 * requests by kind and injects faults into object PUTs (the conditional writes): answers the
 * server never gave, the loss of a real answer after the write applied, S3's 409
 * ConditionalRequestConflict, hangs and slow answers. Real HTTP exchanges, not SDK mocks; the
 * request is forwarded byte for byte with its own Host header, so signatures stay valid.
 *
 * Kept beside Toxiproxy (test/support/toxiproxy.ts, docs/partitions.md) because Toxiproxy works on
 * TCP, below HTTP: it cannot fault one chosen request of a connection (the next object PUT or GET only), answer
 * with a status of its own, change a body, or count operations.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { forward, readAll } from "./forward.js";

export type Flavor = "s3" | "azure";

export type PutFault =
  /** Forward the PUT (it applies), then cut the connection instead of answering. */
  | "reset-after-apply"
  /** Forward the PUT (it applies), then answer 500 / 503 instead of the real answer. */
  | "500-after-apply"
  | "503-after-apply"
  /** Answer 500 / 503 without forwarding (nothing applied). */
  | "500"
  | "503"
  /** S3 only: answer 409 ConditionalRequestConflict without forwarding (nothing applied). */
  | "conditional-conflict"
  /** Never forward and never answer, until the client gives up (or `releaseHung`). */
  | "hang"
  /** Forward at once (it applies), answer only after this many ms. */
  | { delayMs: number };

export type RequestKind = "put" | "get" | "list" | "other";

export class ObjectStoreProxy {
  /** Every request seen, in order, faulty or not: a second PUT for one `put` is an SDK retry. */
  readonly seen: RequestKind[] = [];
  private readonly faults: PutFault[] = [];
  private readonly getFaults: Array<"500" | "503" | "reset"> = [];
  private readonly waiters: Array<() => void> = [];
  private readonly hung = new Set<ServerResponse>();
  private forwarding = 0;

  private constructor(
    private readonly server: Server,
    readonly endpoint: string,
    private readonly upstream: URL,
    private readonly flavor: Flavor,
  ) {}

  /** `upstream`: the server's base URL (for azurite without the account path). */
  static async start(upstream: string, flavor: Flavor): Promise<ObjectStoreProxy> {
    let proxy: ObjectStoreProxy | undefined;
    const server = createServer((req, res) => {
      proxy?.handle(req, res).catch((error: unknown) => {
        res.destroy(error instanceof Error ? error : new Error(String(error)));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    proxy = new ObjectStoreProxy(server, `http://127.0.0.1:${port}`, new URL(upstream), flavor);
    return proxy;
  }

  /** The next PUTs of objects get these faults, one each, in order; later ones pass through. */
  failNextPut(...faults: PutFault[]): void {
    this.faults.push(...faults);
  }

  /** The next object GETs are answered with these errors (or a reset connection), one each, without forwarding. */
  failNextGet(...faults: Array<"500" | "503" | "reset">): void {
    this.getFaults.push(...faults);
  }

  /** Drops every fault not used yet. */
  clearFaults(): void {
    this.faults.length = 0;
    this.getFaults.length = 0;
  }

  /** Faults queued and not used yet. */
  get queuedFaults(): number {
    return this.faults.length;
  }

  count(kind: RequestKind): number {
    return this.seen.filter((k) => k === kind).length;
  }

  /** Forgets the requests seen so far. */
  resetCounts(): void {
    this.seen.length = 0;
  }

  /** Resolves when the proxy next receives an object PUT. */
  nextPut(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Requests held by a "hang" fault whose client is still waiting. */
  get hanging(): number {
    return this.hung.size;
  }

  /** True while no request is being forwarded or answered (hung ones aside). */
  get idle(): boolean {
    return this.forwarding === 0;
  }

  /** Cuts every hung request's connection (the client sees a reset; nothing was applied). */
  releaseHung(): void {
    for (const res of this.hung) res.destroy();
    this.hung.clear();
  }

  async close(): Promise<void> {
    this.releaseHung();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private kind(req: IncomingMessage): RequestKind {
    const url = new URL(req.url ?? "/", "http://proxy");
    // Path-style S3: /bucket/key. Azure: /account/container/blob. Query `comp`/`restype`/`uploadId`: not an object op.
    const segments = url.pathname.split("/").filter((s) => s !== "");
    const objectDepth = this.flavor === "s3" ? 2 : 3;
    const special = ["comp", "restype", "uploadId", "partNumber", "list-type"].some((p) => url.searchParams.has(p));
    if (url.searchParams.get("list-type") === "2" || url.searchParams.get("comp") === "list") return "list";
    if (segments.length < objectDepth || special) return "other";
    if (req.method === "PUT") return "put";
    if (req.method === "GET") return "get";
    return "other";
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readAll(req);
    const kind = this.kind(req);
    this.seen.push(kind);
    const fault = kind === "put" ? this.faults.shift() : kind === "get" ? this.getFaults.shift() : undefined;
    if (kind === "put") for (const wake of this.waiters.splice(0)) wake();
    if (fault === "reset") {
      req.socket.destroy(); // a GET whose connection breaks before any answer
      return;
    }
    switch (fault) {
      case "hang":
        this.hung.add(res);
        res.on("close", () => this.hung.delete(res));
        return;
      case "500":
        return this.sendError(res, 500);
      case "503":
        return this.sendError(res, 503);
      case "conditional-conflict":
        return this.sendError(res, 409);
    }
    this.forwarding++;
    try {
      const answer = await forward(this.upstream, req, body, { keepHost: true });
      if (fault === "reset-after-apply") {
        req.socket.destroy();
        return;
      }
      if (fault === "500-after-apply") return this.sendError(res, 500);
      if (fault === "503-after-apply") return this.sendError(res, 503);
      if (typeof fault === "object") await new Promise((r) => setTimeout(r, fault.delayMs));
      if (res.destroyed) return; // the client gave up meanwhile
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    } finally {
      this.forwarding--;
    }
  }

  /** The error shape each service sends, so the SDK classifies it as it would a real one. */
  private sendError(res: ServerResponse, status: 409 | 500 | 503): void {
    const code =
      this.flavor === "s3"
        ? { 409: "ConditionalRequestConflict", 500: "InternalError", 503: "ServiceUnavailable" }[status]
        : { 409: "Conflict", 500: "InternalError", 503: "ServerBusy" }[status];
    const message = {
      409: "A conflicting operation occurred. If using PutObject you can retry the request.",
      500: "We encountered an internal error. Please try again.",
      503: "Please reduce your request rate.",
    }[status];
    const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>proxy-${Date.now()}</RequestId></Error>`;
    const headers: Record<string, string> = {
      "content-type": "application/xml",
      "content-length": String(Buffer.byteLength(xml)),
    };
    if (this.flavor === "azure") {
      headers["x-ms-error-code"] = code;
      headers["x-ms-request-id"] = `proxy-${Date.now()}`;
    } else {
      headers["x-amz-request-id"] = `proxy-${Date.now()}`;
    }
    res.writeHead(status, headers);
    res.end(xml);
  }
}
