/**
 * The forwarding half of the test fault proxies (DynamoDB, GCS, S3/Azure): read a request or an
 * answer whole, and send one request upstream on a fresh connection, reading its whole answer, so
 * a proxy can decide what the client gets after the server has acted.
 *
 * HTTP-aware on purpose: whole-connection faults (partitions, half-open links, latency) come from
 * Toxiproxy (test/support/toxiproxy.ts); these proxies exist for what it cannot do, per request.
 */
import { type IncomingMessage, request } from "node:http";

export interface Reply {
  status: number;
  /** The upstream's headers, minus connection framing, with the body's length. */
  headers: Record<string, string | string[]>;
  body: Buffer;
}

export type Outgoing = Pick<IncomingMessage, "method" | "url" | "headers">;

export function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    stream.on("error", reject);
  });
}

/**
 * Sends `req` with `body` to `upstream` and reads the whole answer. The Host header becomes the
 * upstream's, unless `keepHost`: a signed request (S3, Azure) must reach the server byte for byte,
 * its signature covers the Host it was signed for.
 */
export function forward(
  upstream: URL,
  req: Outgoing,
  body: Buffer,
  options: { keepHost?: boolean } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers, ...(options.keepHost ? {} : { host: upstream.host }), connection: "close" };
    const out = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
      (reply) => {
        readAll(reply).then((data) => {
          const kept: Record<string, string | string[]> = {};
          for (const [k, v] of Object.entries(reply.headers)) {
            if (v !== undefined && k !== "connection" && k !== "transfer-encoding") kept[k] = v;
          }
          kept["content-length"] = String(data.length);
          resolve({ status: reply.statusCode ?? 502, headers: kept, body: data });
        }, reject);
      },
    );
    out.on("error", reject);
    out.end(body);
  });
}
