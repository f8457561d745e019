/**
 * An HTTP proxy on 127.0.0.1 in front of fake-gcs-server that injects faults into uploads (the
 * conditional writes): answers the SDK never should have got, or the loss of a real answer after
 * the write applied; and into object downloads (the reads): an error status or a connection cut
 * before any answer. Everything else passes through untouched.
 *
 * Kept beside Toxiproxy (test/support/toxiproxy.ts, docs/partitions.md) because Toxiproxy works on
 * TCP, below HTTP: it cannot fault one chosen request of a connection (the next upload or download only), answer
 * with a status of its own, change a body, or count operations.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { forward, readAll } from "./forward.js";

export type UploadFault =
  /** Forward the upload (it applies), then cut the connection instead of answering. */
  | "reset-after-apply"
  /** Forward the upload (it applies), then answer 503 instead of the real answer. */
  | "503-after-apply"
  /** Answer 503 without forwarding (nothing applied). */
  | "503"
  /** Answer 429 without forwarding (nothing applied). */
  | "429"
  /** Never answer and never forward, until the client gives up. */
  | "hang";

export class GcsFaultProxy {
  /** Upload requests seen, faulty or not: a second one for one put is an SDK retry. */
  uploads = 0;
  /** Object downloads (`alt=media` GETs) seen, faulty or not. */
  downloads = 0;
  private readonly faults: UploadFault[] = [];
  private readonly downloadFaults: Array<"503" | "reset"> = [];
  private readonly waiters: Array<() => void> = [];

  private constructor(
    private readonly server: Server,
    readonly endpoint: string,
    private readonly upstream: URL,
  ) {}

  static async start(upstream: string): Promise<GcsFaultProxy> {
    let proxy: GcsFaultProxy | undefined;
    const server = createServer((req, res) => {
      proxy?.handle(req, res).catch((error: unknown) => {
        res.destroy(error instanceof Error ? error : new Error(String(error)));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (typeof address !== "object" || address === null) throw new Error("proxy did not bind");
    proxy = new GcsFaultProxy(server, `http://127.0.0.1:${address.port}`, new URL(upstream));
    return proxy;
  }

  /** The next uploads get these faults, one each, in order; later ones pass through. */
  failNextUpload(...faults: UploadFault[]): void {
    this.faults.push(...faults);
  }

  /** The next object downloads get these faults, one each, without forwarding ("reset": the connection is cut unanswered). */
  failNextDownload(...faults: Array<"503" | "reset">): void {
    this.downloadFaults.push(...faults);
  }

  /** Resolves when the proxy next receives an upload. */
  nextUpload(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readAll(req);
    const isUpload = req.method === "POST" && (req.url ?? "").startsWith("/upload/");
    const isDownload =
      req.method === "GET" && new URL(req.url ?? "/", "http://proxy").searchParams.get("alt") === "media";
    if (isDownload) {
      this.downloads++;
      const downloadFault = this.downloadFaults.shift();
      if (downloadFault === "reset") {
        req.socket.destroy();
        return;
      }
      if (downloadFault === "503") return sendError(res, 503, "backendError");
    }
    const fault = isUpload ? this.faults.shift() : undefined;
    if (isUpload) {
      this.uploads++;
      for (const wake of this.waiters.splice(0)) wake();
    }
    switch (fault) {
      case "hang":
        return;
      case "503":
        return sendError(res, 503, "backendError");
      case "429":
        return sendError(res, 429, "rateLimitExceeded");
    }
    const answer = await forward(this.upstream, req, body);
    if (fault === "reset-after-apply") {
      req.socket.destroy();
      return;
    }
    if (fault === "503-after-apply") return sendError(res, 503, "backendError");
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  }
}

/** The JSON error shape GCS sends, so the SDK classifies it as it would a real one. */
function sendError(res: ServerResponse, status: number, reason: string): void {
  const message = status === 429 ? "The rate of change requests to the object is too high" : "Backend Error";
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { code: status, message, errors: [{ domain: "global", reason, message }] } }));
}
