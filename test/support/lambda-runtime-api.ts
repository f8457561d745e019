/**
 * The Lambda Runtime API (2018-06-01) on 127.0.0.1, as the Lambda service serves it to a
 * function's runtime, so a test can drive the real Node.js runtime interface client
 * (aws-lambda-ric, test/support/lambda-ric.ts) the way Lambda does. The AWS Lambda Runtime
 * Interface Emulator would be the obvious stand-in, but it cannot stream responses (its issue
 * #175 is open and the pull request adding it, #179, is unmerged), so this server implements the
 * documented contract itself:
 * - `GET /runtime/invocation/next` waits until a test queues an invocation, then answers with the
 *   event as its body and the Lambda-Runtime-Aws-Request-Id, -Deadline-Ms, -Invoked-Function-Arn
 *   and -Trace-Id headers;
 * - `POST /runtime/invocation/{id}/response` takes the answer: JSON when buffered, or, with
 *   `Lambda-Runtime-Function-Response-Mode: streaming`, a chunked body that for an HTTP
 *   integration (content type application/vnd.awslambda.http-integration-response) starts with
 *   a JSON prelude (statusCode, headers, cookies) and 8 NUL bytes, then the response body, with an
 *   error reported in the Lambda-Runtime-Function-Error-Type / -Body trailers;
 * - `POST /runtime/invocation/{id}/error` and `/runtime/init/error` record failures.
 * Each chunk is handed to the test the moment it arrives, so a test sees when the function wrote it.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const PREFIX = "/2018-06-01/runtime";
const DELIMITER = Buffer.alloc(8);

export interface Prelude {
  statusCode: number;
  headers: Record<string, string>;
  cookies?: string[];
}

/** One invocation as the test sees its answer arrive. */
export class Invocation {
  readonly id = randomUUID();
  /** The HTTP integration's prelude, once the function sent it. */
  readonly prelude: Promise<Prelude>;
  /** The response body after the prelude, chunk by chunk as the function writes it. */
  readonly body: ReadableStream<Uint8Array>;
  /** Resolves when the runtime has finished its POST of the answer (the invocation is over). */
  readonly finished: Promise<void>;
  /** True once the answer's POST has ended. */
  done = false;
  /** The streaming mode header and trailers the runtime sent. */
  mode: string | undefined;
  trailers: Record<string, string> = {};
  error: unknown;

  private setPrelude!: (p: Prelude) => void;
  private failPrelude!: (e: unknown) => void;
  private body$!: ReadableStreamDefaultController<Uint8Array>;
  private finish!: () => void;

  constructor(
    readonly event: unknown,
    readonly deadlineMs: number,
  ) {
    this.prelude = new Promise((resolve, reject) => {
      this.setPrelude = resolve;
      this.failPrelude = reject;
    });
    this.prelude.catch(() => undefined);
    this.body = new ReadableStream({
      start: (c) => {
        this.body$ = c;
      },
    });
    this.finished = new Promise((resolve) => {
      this.finish = resolve;
    });
  }

  /** The runtime's POST of the answer: the prelude first, then the body as it comes. */
  async receive(req: IncomingMessage): Promise<void> {
    this.mode = header(req, "lambda-runtime-function-response-mode");
    let head = Buffer.alloc(0);
    let inBody = false;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      if (inBody) {
        this.body$.enqueue(new Uint8Array(chunk));
        continue;
      }
      head = Buffer.concat([head, chunk]);
      const at = head.indexOf(DELIMITER);
      if (at === -1) continue;
      try {
        this.setPrelude(JSON.parse(head.subarray(0, at).toString()) as Prelude);
      } catch (error) {
        this.failPrelude(error);
      }
      inBody = true;
      const rest = head.subarray(at + DELIMITER.length);
      if (rest.length > 0) this.body$.enqueue(new Uint8Array(rest));
    }
    if (!inBody) this.failPrelude(new Error(`no prelude in the answer: ${head.toString()}`));
    for (let i = 0; i + 1 < req.rawTrailers.length; i += 2)
      this.trailers[req.rawTrailers[i]!] = req.rawTrailers[i + 1]!;
    this.end();
  }

  fail(error: unknown): void {
    if (this.done) return;
    this.error = error;
    this.failPrelude(error);
    this.end();
  }

  private end(): void {
    if (this.done) return;
    this.done = true;
    this.body$.close();
    this.finish();
  }
}

export class LambdaRuntimeApi {
  /** host:port, for AWS_LAMBDA_RUNTIME_API. */
  readonly address: string;
  readonly initErrors: unknown[] = [];
  private readonly queue: Invocation[] = [];
  private readonly waiting: Array<(invocation: Invocation) => void> = [];
  private readonly invocations = new Map<string, Invocation>();

  private constructor(private readonly server: ReturnType<typeof createServer>) {
    this.address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  static async start(): Promise<LambdaRuntimeApi> {
    let api: LambdaRuntimeApi | undefined;
    const server = createServer((req, res) => void api?.handle(req, res));
    // The runtime long-polls for the next invocation: no timeout may cut that request.
    server.requestTimeout = 0;
    server.headersTimeout = 0;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    api = new LambdaRuntimeApi(server);
    return api;
  }

  /** Queues an invocation of `event`; its deadline is `timeoutMs` from now, as Lambda counts it. */
  invoke(event: unknown, timeoutMs: number): Invocation {
    const invocation = new Invocation(event, Date.now() + timeoutMs);
    this.invocations.set(invocation.id, invocation);
    const next = this.waiting.shift();
    if (next) next(invocation);
    else this.queue.push(invocation);
    return invocation;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = req.url ?? "";
    if (req.method === "GET" && path === `${PREFIX}/invocation/next`) {
      const invocation = this.queue.shift() ?? (await new Promise<Invocation>((r) => this.waiting.push(r)));
      const body = JSON.stringify(invocation.event);
      res.writeHead(200, {
        "Content-Type": "application/json",
        "Lambda-Runtime-Aws-Request-Id": invocation.id,
        "Lambda-Runtime-Deadline-Ms": String(invocation.deadlineMs),
        "Lambda-Runtime-Invoked-Function-Arn": "arn:aws:lambda:us-east-1:123456789012:function:leasehold-api",
        "Lambda-Runtime-Trace-Id": `Root=1-${Date.now().toString(16)}-${randomUUID().replaceAll("-", "").slice(0, 24)};Sampled=0`,
      });
      res.end(body);
      return;
    }
    const match = /^\/2018-06-01\/runtime\/invocation\/([^/]+)\/(response|error)$/.exec(path);
    const invocation = match ? this.invocations.get(decodeURIComponent(match[1]!)) : undefined;
    if (req.method === "POST" && invocation && match?.[2] === "response") {
      try {
        await invocation.receive(req);
      } catch (error) {
        // The runtime went away mid-answer (killed at the end of a test).
        invocation.fail(error);
        return;
      }
      res.writeHead(202).end('{"status":"OK"}');
      return;
    }
    if (req.method === "POST" && invocation && match?.[2] === "error") {
      invocation.fail(new Error(`invocation error: ${await text(req)}`));
      res.writeHead(202).end('{"status":"OK"}');
      return;
    }
    if (req.method === "POST" && path === `${PREFIX}/init/error`) {
      this.initErrors.push(await text(req));
      res.writeHead(202).end('{"status":"OK"}');
      return;
    }
    res.writeHead(404).end();
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function text(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
}
