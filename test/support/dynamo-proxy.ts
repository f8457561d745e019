/**
 * An HTTP proxy on 127.0.0.1 in front of dynalite that injects faults into PutItem calls, so
 * tests see what the SDK sees on a real network: a response lost after the write applied (the
 * socket is destroyed), throttling and 5xx answers, and calls that never answer; and BatchGetItem
 * answers that leave keys unprocessed, as DynamoDB does under throttling (dynalite never does).
 * These are real HTTP exchanges, not SDK mocks. Every other request is forwarded untouched.
 *
 * Kept beside Toxiproxy (test/support/toxiproxy.ts, docs/partitions.md) because Toxiproxy works on
 * TCP, below HTTP: it cannot fault one chosen request of a connection (the next PutItem, after dynalite applied it only), answer
 * with a status of its own, change a body, or count operations.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { forward, type Reply, readAll } from "./forward.js";

export type PutFault =
  /** Forward, let dynalite apply it, then destroy the socket instead of answering. */
  | "drop-response"
  /** Answer 400 ThrottlingException without forwarding (nothing applied). */
  | "throttle"
  /** Forward (it applies), then answer 400 ThrottlingException. */
  | "throttle-after-apply"
  /** Answer 500 InternalServerError without forwarding. */
  | "server-error"
  /** Never answer (until the client gives up and closes the socket). */
  | "hang";

export class DynamoProxy {
  /** Operations seen, in order (the x-amz-target suffix, e.g. "PutItem"). */
  readonly seen: string[] = [];
  private readonly faults: PutFault[] = [];
  private readonly waiters: Array<{ operation: string; resolve: () => void }> = [];

  private constructor(
    readonly endpoint: string,
    private readonly server: ReturnType<typeof createServer>,
  ) {}

  static async start(target: string): Promise<DynamoProxy> {
    const upstream = new URL(target);
    let proxy: DynamoProxy | undefined;
    const server = createServer((req, res) => {
      void proxy?.handle(upstream, req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    const { port } = server.address() as AddressInfo;
    proxy = new DynamoProxy(`http://127.0.0.1:${port}`, server);
    return proxy;
  }

  /**
   * Behave like real DynamoDB on a failed condition of PutItem or UpdateItem: add the current item to the
   * ConditionalCheckFailedException body (ReturnValuesOnConditionCheckFailure: ALL_OLD), which
   * dynalite leaves out. The proxy reads it from dynalite itself; the client sees no extra call.
   */
  returnOldItem = false;

  /**
   * For the next BatchGetItem answers, one each: how many of the items dynalite returned to hold
   * back and report under UnprocessedKeys instead.
   */
  readonly unprocessed: number[] = [];

  /** Faults for the next PutItem requests (SDK retries included), one each. */
  failNextPut(...faults: PutFault[]): void {
    this.faults.push(...faults);
  }

  count(operation: string): number {
    return this.seen.filter((o) => o === operation).length;
  }

  /** Resolves once the proxy has received (not necessarily answered) a request for `operation`. */
  waitFor(operation: string): Promise<void> {
    if (this.seen.includes(operation)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ operation, resolve }));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(upstream: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readAll(req);
    const operation = String(req.headers["x-amz-target"] ?? "").split(".")[1] ?? "";
    this.seen.push(operation);
    for (const w of this.waiters.filter((w) => w.operation === operation)) {
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.resolve();
    }
    const fault = operation === "PutItem" ? (this.faults.shift() ?? "none") : "none";
    switch (fault) {
      case "throttle":
        return answer(res, 400, "ThrottlingException", "Rate of requests exceeds the allowed throughput.");
      case "server-error":
        return answer(res, 500, "InternalServerError", "Internal server error (injected by the test proxy)");
      case "hang":
        return;
      case "drop-response":
        await forward(upstream, req, body);
        req.socket.destroy();
        return;
      case "throttle-after-apply":
        await forward(upstream, req, body);
        return answer(res, 400, "ThrottlingException", "Rate of requests exceeds the allowed throughput.");
      default: {
        let reply = await forward(upstream, req, body);
        if (this.returnOldItem && (operation === "PutItem" || operation === "UpdateItem")) {
          reply = await withOldItem(upstream, req, body, reply);
        }
        const holdBack = operation === "BatchGetItem" ? this.unprocessed.shift() : undefined;
        if (holdBack !== undefined) reply = withUnprocessedKeys(reply, holdBack);
        res.writeHead(reply.status, reply.headers);
        res.end(reply.body);
      }
    }
  }
}

/** Adds `Item` to a ConditionalCheckFailedException reply, read with a consistent GetItem. */
async function withOldItem(upstream: URL, req: IncomingMessage, body: Buffer, reply: Reply): Promise<Reply> {
  const error = JSON.parse(reply.body.toString() || "{}") as { __type?: string; Item?: unknown };
  if (reply.status !== 400 || !error.__type?.endsWith("#ConditionalCheckFailedException") || error.Item) return reply;
  const write = JSON.parse(body.toString()) as {
    TableName: string;
    Item?: Record<string, unknown>;
    Key?: Record<string, unknown>;
  };
  // UpdateItem names its key; PutItem's item holds it (the test tables' key is "pk").
  const key = write.Key ?? Object.fromEntries(Object.entries(write.Item ?? {}).filter(([k]) => k === "pk"));
  const get = Buffer.from(JSON.stringify({ TableName: write.TableName, Key: key, ConsistentRead: true }));
  const headers = {
    ...req.headers,
    "x-amz-target": "DynamoDB_20120810.GetItem",
    "content-length": String(get.length),
  };
  const current = await forward(upstream, { method: "POST", url: req.url, headers }, get);
  const item = (JSON.parse(current.body.toString()) as { Item?: unknown }).Item;
  const patched = Buffer.from(JSON.stringify({ ...error, ...(item ? { Item: item } : {}) }));
  return { ...reply, body: patched, headers: { ...reply.headers, "content-length": String(patched.length) } };
}

/** Moves `count` items of a BatchGetItem answer (each table's last ones) to its UnprocessedKeys, by key. */
function withUnprocessedKeys(reply: Reply, count: number): Reply {
  type Item = Record<string, unknown>;
  const answer = JSON.parse(reply.body.toString()) as { Responses?: Record<string, Item[]> };
  const unprocessed: Record<string, { Keys: Item[]; ConsistentRead: boolean }> = {};
  for (const [table, items] of Object.entries(answer.Responses ?? {})) {
    const held = items.splice(Math.max(0, items.length - count));
    if (held.length > 0) unprocessed[table] = { Keys: held.map((item) => ({ pk: item.pk })), ConsistentRead: true };
  }
  const patched = Buffer.from(JSON.stringify({ ...answer, UnprocessedKeys: unprocessed }));
  return { ...reply, body: patched, headers: { ...reply.headers, "content-length": String(patched.length) } };
}

/** An error body in the DynamoDB JSON protocol's shape, as real DynamoDB sends it. */
function answer(res: ServerResponse, status: number, type: string, message: string): void {
  const body = JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message });
  res.writeHead(status, {
    "content-type": "application/x-amz-json-1.0",
    "content-length": String(Buffer.byteLength(body)),
    "x-amzn-requestid": `proxy-${Date.now()}`,
  });
  res.end(body);
}
