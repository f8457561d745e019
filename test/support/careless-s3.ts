/**
 * A few lines of Node that speak just enough S3 (path-style GET and PUT of objects, XML errors) to
 * stand in for the S3-compatible servers that break the conditional-write contract:
 *   "ignores-conditions": stores every PUT, whatever If-None-Match / If-Match say (as s3rver does);
 *   "not-implemented":    answers 501 NotImplemented to a PUT carrying either header;
 *   "hides-missing":      honours nothing either, and answers 403 AccessDenied for a missing key,
 *                         as AWS does to a caller without s3:ListBucket;
 *   "racy":               honours both as S3 does (412 PreconditionFailed, 404 NoSuchKey for an
 *                         If-Match on nothing), but checks, then waits `RACY_GAP_MS`, then writes,
 *                         with no lock between: moto's race, widened so that writers arriving
 *                         together nearly always find the check passed for several of them. One at
 *                         a time it keeps the contract (the store's probe passes).
 * Every request is recorded, with the client port of its connection, so a test can say what a
 * client did and did not send, and on which connections.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export type Carelessness = "ignores-conditions" | "not-implemented" | "hides-missing" | "racy";

/** How long the "racy" server waits between checking a condition and writing. */
export const RACY_GAP_MS = 50;

export interface CarelessS3 {
  endpoint: string;
  requests: Array<{ method: string; key: string; conditional: boolean; port: number }>;
  objects: Map<string, { body: string; etag: string }>;
  close(): Promise<void>;
}

const error = (code: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`;

export async function startCarelessS3(mode: Carelessness): Promise<CarelessS3> {
  const requests: CarelessS3["requests"] = [];
  const objects: CarelessS3["objects"] = new Map();
  const server = createServer(async (req, res) => {
    const key = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname.slice(1));
    const conditional = req.headers["if-none-match"] !== undefined || req.headers["if-match"] !== undefined;
    requests.push({ method: req.method ?? "", key, conditional, port: req.socket.remotePort ?? 0 });
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const reply = (status: number, body = "", headers: Record<string, string> = {}) =>
      res.writeHead(status, { "content-type": "application/xml", ...headers }).end(body);
    if (req.method === "PUT" && conditional && mode === "not-implemented") return reply(501, error("NotImplemented"));
    if (req.method === "PUT" && mode === "racy") {
      const found = objects.get(key);
      const ifMatch = req.headers["if-match"];
      if (ifMatch !== undefined && found === undefined) return reply(404, error("NoSuchKey"));
      if ((ifMatch !== undefined && ifMatch !== found?.etag) || (req.headers["if-none-match"] === "*" && found)) {
        return reply(412, error("PreconditionFailed"));
      }
      await new Promise((resolve) => setTimeout(resolve, RACY_GAP_MS)); // the race: nothing holds the key
    }
    if (req.method === "PUT") {
      const etag = `"${randomUUID()}"`;
      objects.set(key, { body: Buffer.concat(chunks).toString("utf8"), etag });
      return reply(200, "", { etag });
    }
    const object = objects.get(key);
    if (req.method === "GET" && object)
      return reply(200, object.body, { etag: object.etag, "content-type": "application/json" });
    if (req.method === "GET")
      return mode === "hides-missing" ? reply(403, error("AccessDenied")) : reply(404, error("NoSuchKey"));
    reply(405, error("MethodNotAllowed"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    objects,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
