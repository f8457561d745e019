/**
 * Durable Object store for Cloudflare Workers: one Durable Object per lease
 * (`namespace.idFromName(name)`), so every lease has exactly one single-threaded owner that all
 * Worker instances, in every location, talk to.
 *
 * Two halves live here, both runtime-neutral (fetch, WebSocket, no `cloudflare:` imports, so the
 * file also type-checks and loads on Node):
 *
 * - `LeaseObject`, the Durable Object class (export it from the Worker entry and bind it, e.g.
 *   as `LEASES`). It keeps the lease as `{ record, rev }` under one storage key and a copy in
 *   memory, loaded once inside `blockConcurrencyWhile`. A CAS is one request: the check against
 *   the in-memory copy and the update happen in the same synchronous step, so no other request
 *   can interleave; the storage write is covered by the output gate (no response and no
 *   broadcast leaves the object before the write is durable; a failed write resets the object).
 *   `rev` is a counter, the revision is its decimal string. Watchers connect by WebSocket with
 *   the hibernation API (`acceptWebSocket`): each gets the current record at once and then every
 *   committed change, so a release reaches followers on every Worker instance without polling.
 *   The object named `~index` (not a valid lease name) plays the directory: an append-only,
 *   sorted set of lease names, which is enough because records are never deleted.
 *
 * - `DurableObjectStore`, the `LeaseStore` that talks to those objects through the namespace
 *   binding. `put(_, null)` first adds the name to the directory and only then creates the
 *   record, so a listing never misses a lease that exists; a name whose create then failed is a
 *   directory entry without a record, which `list` skips. `list(prefix)` pages through the
 *   directory and reads each record from its own object (strongly consistent, in name order).
 *
 * Errors: a conflict carries the current record (the object has it in memory). A failed call to
 * the object (exception from `stub.fetch`, e.g. a reset or network blip, or a 5xx) is a
 * `LeaseStoreError`, ambiguous for `put` because the object may have committed before the
 * answer was lost; the elector resolves that by `writeId`. The store never retries.
 */

import { isLeaseValidationError, LeaseConflictError, LeaseStoreError, LeaseValidationError } from "../errors.js";
import {
  type CallOptions,
  type LeaseRecord,
  type LeaseStore,
  type Listed,
  type ListOptions,
  parseRecord,
  type Revision,
  type Stored,
  validateName,
  validatePrefix,
  validateRecord,
} from "../lease.js";
import { settleUnreadable, storedAt } from "../listing.js";
import { parseRevision } from "./revision.js";

// ---- The slice of the Workers runtime this file uses, declared here (no @cloudflare/workers-types).

/** A WebSocket as workerd has it: `accept()` on the client end, hibernation on the object end. */
export interface WorkerWebSocket {
  accept(): void;
  send(message: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close" | "error", listener: () => void): void;
}

export interface DurableObjectStorageLike {
  get<T>(key: string): Promise<T | undefined>;
  put(key: string, value: unknown): Promise<void>;
  list<T>(options: { prefix?: string; startAfter?: string; limit?: number }): Promise<Map<string, T>>;
}

export interface DurableObjectStateLike {
  readonly storage: DurableObjectStorageLike;
  blockConcurrencyWhile<T>(callback: () => Promise<T>): Promise<T>;
  acceptWebSocket(socket: WorkerWebSocket): void;
  getWebSockets(): WorkerWebSocket[];
}

export interface DurableObjectStubLike {
  fetch(url: string, init?: RequestInit): Promise<Response>;
}

/** A Durable Object namespace binding (`env.LEASES`) whose class is `LeaseObject`. */
export interface LeaseNamespace<Id = unknown> {
  idFromName(name: string): Id;
  get(id: Id): DurableObjectStubLike;
}

type WebSocketPairConstructor = new () => { 0: WorkerWebSocket; 1: WorkerWebSocket };

// ---- Wire format between the store and the objects (same deployment, so versioned only by code).

/** The directory's own object name: "~" is outside the lease name alphabet, so no lease can collide. */
export const INDEX_OBJECT = "~index";
const ORIGIN = "https://lease.object";
const RECORD_KEY = "lease";
const NAME_KEY = "n:";
/** Default names per directory page, which is also how many records `list` reads in parallel. */
const INDEX_PAGE = 100;
const MAX_INDEX_PAGE = 1000;

interface Entry {
  record: LeaseRecord;
  rev: number;
}

interface StoredWire {
  record: unknown;
  revision: string;
}

const toWire = (entry: Entry | undefined): StoredWire | null =>
  entry ? { record: entry.record, revision: String(entry.rev) } : null;

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

// ---- The Durable Object.

/** One lease (or, as `~index`, the directory of lease names). Bind it in wrangler.toml. */
export class LeaseObject {
  private entry: Entry | undefined;

  constructor(
    private readonly state: DurableObjectStateLike,
    _env?: unknown,
  ) {
    // Load once before the first request: afterwards every check reads memory, synchronously.
    void state.blockConcurrencyWhile(async () => {
      this.entry = await state.storage.get<Entry>(RECORD_KEY);
    });
  }

  async fetch(request: Request): Promise<Response> {
    const { pathname, searchParams } = new URL(request.url);
    try {
      switch (`${request.method} ${pathname}`) {
        case "GET /lease":
          return json({ stored: toWire(this.entry) });
        case "PUT /lease":
          return await this.put(await request.json());
        case "GET /watch":
          return this.acceptWatcher(request);
        case "GET /index":
          return await this.listNames(searchParams);
        case "POST /index":
          return await this.addName(await request.json());
        default:
          return json({ error: `no route ${request.method} ${pathname}` }, 404);
      }
    } catch (error) {
      if (isLeaseValidationError(error)) return json({ error: error.message }, 400);
      throw error;
    }
  }

  /** The compare-and-swap: everything from the check to `this.entry = next` runs without an await. */
  private async put(body: unknown): Promise<Response> {
    const { record: raw, expected } = (body ?? {}) as { record?: unknown; expected?: unknown };
    const record = validateRecord(raw);
    const wanted = expected === null ? null : parseRevision(expected as string);
    const current = this.entry;
    if (current && current.record.name !== record.name) {
      throw new LeaseValidationError("lease record", [
        { path: "name", message: `this object holds "${current.record.name}"` },
      ]);
    }
    if (wanted === null ? current !== undefined : current?.rev !== wanted) {
      return json({ current: toWire(current) }, 409);
    }
    const next: Entry = { record, rev: (current?.rev ?? 0) + 1 };
    this.entry = next;
    const written = this.state.storage.put(RECORD_KEY, next);
    this.broadcast(next);
    await written;
    return json({ stored: toWire(next) });
  }

  private broadcast(entry: Entry): void {
    const message = JSON.stringify({ stored: toWire(entry) });
    for (const socket of this.state.getWebSockets()) {
      try {
        socket.send(message);
      } catch {
        // A socket that is closing already; the runtime drops it from getWebSockets soon.
      }
    }
  }

  private acceptWatcher(request: Request): Response {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return json({ error: "expected Upgrade: websocket" }, 426);
    }
    const Pair = (globalThis as unknown as { WebSocketPair: WebSocketPairConstructor }).WebSocketPair;
    const { 0: client, 1: server } = new Pair();
    // Hibernation API: the object may leave memory while sockets stay open; broadcast finds them again.
    this.state.acceptWebSocket(server);
    server.send(JSON.stringify({ stored: toWire(this.entry) }));
    return new Response(null, { status: 101, webSocket: client } as ResponseInit);
  }

  /** Watchers only listen; anything they send is ignored. */
  webSocketMessage(): void {}

  webSocketClose(socket: WorkerWebSocket, code: number, reason: string): void {
    try {
      socket.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed.
    }
  }

  private async addName(body: unknown): Promise<Response> {
    const name = validateName((body as { name?: unknown } | null)?.name);
    await this.state.storage.put(NAME_KEY + name, 1);
    return new Response(null, { status: 204 });
  }

  private async listNames(query: URLSearchParams): Promise<Response> {
    const prefix = validatePrefix(query.get("prefix") ?? "");
    const startAfter = query.get("startAfter");
    const limit = Math.min(Math.max(Number(query.get("limit") ?? INDEX_PAGE) || INDEX_PAGE, 1), MAX_INDEX_PAGE);
    const keys = await this.state.storage.list<number>({
      prefix: NAME_KEY + prefix,
      ...(startAfter ? { startAfter: NAME_KEY + startAfter } : {}),
      limit,
    });
    return json({ names: [...keys.keys()].map((k) => k.slice(NAME_KEY.length)) });
  }
}

// ---- The LeaseStore.

export interface DurableObjectStoreOptions {
  /** The namespace binding of `LeaseObject` (`env.LEASES`). */
  namespace: LeaseNamespace;
  /** Names `list` fetches from the directory per request; their records are then read in parallel. Default 100. */
  listPageSize?: number;
}

export class DurableObjectStore implements LeaseStore {
  private readonly namespace: LeaseNamespace;
  private readonly pageSize: number;

  constructor(options: DurableObjectStoreOptions) {
    const namespace = options?.namespace as Partial<LeaseNamespace> | undefined;
    if (typeof namespace?.idFromName !== "function" || typeof namespace.get !== "function") {
      throw new LeaseValidationError("DurableObjectStore options", [
        { path: "namespace", message: "expected a Durable Object namespace binding (env.LEASES)" },
      ]);
    }
    const pageSize = options.listPageSize ?? INDEX_PAGE;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_INDEX_PAGE) {
      throw new LeaseValidationError("DurableObjectStore options", [
        { path: "listPageSize", message: `expected a whole number from 1 to ${MAX_INDEX_PAGE}` },
      ]);
    }
    this.namespace = options.namespace;
    this.pageSize = pageSize;
  }

  async get(name: string, options?: CallOptions): Promise<Stored | null> {
    validateName(name);
    const response = await this.call(name, "/lease", { method: "GET" }, options, false);
    const body = (await response.json()) as { stored: StoredWire | null };
    return body.stored ? decode(name, body.stored) : null;
  }

  async put(next: LeaseRecord, expected: Revision | null, options?: CallOptions): Promise<Stored> {
    const record = validateRecord(next);
    if (expected !== null) parseRevision(expected);
    // Directory first: a lease that exists is always listed; a failure here has written nothing.
    if (expected === null) await this.addToIndex(record.name, options);
    const response = await this.call(
      record.name,
      "/lease",
      { method: "PUT", body: JSON.stringify({ record, expected }), headers: { "content-type": "application/json" } },
      options,
      true,
    );
    if (response.status === 409) {
      const { current } = (await response.json()) as { current: StoredWire | null };
      throw new LeaseConflictError(record.name, current ? decode(record.name, current) : null);
    }
    const { stored } = (await response.json()) as { stored: StoredWire };
    return decode(record.name, stored);
  }

  checkRevision(revision: Revision): void {
    parseRevision(revision);
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<Listed> {
    validatePrefix(prefix);
    let startAfter = options.startAfter;
    let remaining = options.limit ?? Number.POSITIVE_INFINITY;
    while (remaining > 0) {
      const query = new URLSearchParams({ prefix, limit: String(this.pageSize) });
      if (startAfter !== undefined) query.set("startAfter", startAfter);
      const response = await this.call(INDEX_OBJECT, `/index?${query}`, { method: "GET" }, {}, false);
      const { names } = (await response.json()) as { names: string[] };
      // One page of records in parallel; each comes from its own object, so each is current.
      // A record that cannot be read is reported in its place (the rest of the page is served).
      const records = await Promise.all(names.map((n) => settleUnreadable(this.get(n))));
      for (const stored of records) {
        if (!stored || remaining <= 0) continue;
        remaining--;
        yield stored;
      }
      if (names.length < this.pageSize) return;
      startAfter = names[names.length - 1];
    }
  }

  /**
   * Pushes: opens a WebSocket to the lease's object, yields the current record, then each
   * committed change. When the object drops the socket (reset, code update) it reconnects and
   * carries on (the object sends the current record first, which covers anything missed); a
   * reconnect that fails, or a socket closed before its first message, throws `LeaseStoreError`.
   */
  async *watch(name: string, signal: AbortSignal): AsyncIterable<Stored | null> {
    validateName(name);
    while (!signal.aborted) {
      const socket = await this.connectWatcher(name, signal);
      const messages: unknown[] = [];
      let received = 0;
      let closed = false;
      let wake: (() => void) | undefined;
      const notify = () => {
        wake?.();
        wake = undefined;
      };
      socket.addEventListener("message", (event) => {
        messages.push(event.data);
        notify();
      });
      const onClose = () => {
        closed = true;
        notify();
      };
      socket.addEventListener("close", onClose);
      socket.addEventListener("error", onClose);
      signal.addEventListener("abort", notify, { once: true });
      socket.accept();
      try {
        while (!signal.aborted) {
          const data = messages.shift();
          if (data !== undefined) {
            received++;
            const { stored } = JSON.parse(String(data)) as { stored: StoredWire | null };
            yield stored ? decode(name, stored) : null;
            continue;
          }
          if (closed) {
            // Every connection starts with the current record: one that closed before even that is
            // a failing object, and reconnecting at once would spin.
            if (received === 0) {
              throw new LeaseStoreError(`watch "${name}": the Durable Object closed the WebSocket at once`, {
                ambiguous: false,
              });
            }
            break;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
      } finally {
        signal.removeEventListener("abort", notify);
        if (!closed) {
          try {
            socket.close(1000, "watch ended");
          } catch {
            // Already closing.
          }
        }
      }
    }
  }

  private async connectWatcher(name: string, signal: AbortSignal): Promise<WorkerWebSocket> {
    const response = await this.call(name, "/watch", { method: "GET", headers: { upgrade: "websocket" } }, {}, false);
    const socket = (response as Response & { webSocket?: WorkerWebSocket | null }).webSocket;
    if (response.status !== 101 || !socket) {
      throw new LeaseStoreError(`watch "${name}": the Durable Object refused the WebSocket (${response.status})`, {
        ambiguous: false,
      });
    }
    if (signal.aborted) socket.close(1000, "watch ended");
    return socket;
  }

  private async addToIndex(name: string, options?: CallOptions): Promise<void> {
    await this.call(
      INDEX_OBJECT,
      "/index",
      { method: "POST", body: JSON.stringify({ name }), headers: { "content-type": "application/json" } },
      options,
      false,
    );
  }

  /** One request to one object; maps every failure to exactly one error. */
  private async call(
    object: string,
    path: string,
    init: RequestInit,
    options: CallOptions | undefined,
    write: boolean,
  ): Promise<Response> {
    const stub = this.namespace.get(this.namespace.idFromName(object));
    const what = `${init.method} ${path.split("?")[0]} on the Durable Object for "${object}"`;
    let response: Response;
    try {
      response = await stub.fetch(`${ORIGIN}${path}`, options?.signal ? { ...init, signal: options.signal } : init);
    } catch (cause) {
      throw new LeaseStoreError(`${what} failed: ${(cause as Error)?.message ?? cause}`, { ambiguous: write, cause });
    }
    if (response.status === 400) {
      const { error } = (await response.json()) as { error: string };
      throw new LeaseValidationError("Durable Object request", [{ path: "", message: error }]);
    }
    if (response.status >= 500 || (response.status >= 300 && response.status !== 409 && response.status !== 101)) {
      const text = await response.text().catch(() => "");
      throw new LeaseStoreError(`${what} answered ${response.status}: ${text.slice(0, 200)}`, {
        ambiguous: write && response.status >= 500,
      });
    }
    return response;
  }
}

function decode(name: string, wire: StoredWire): Stored {
  return storedAt(wire.revision, () => parseRecord(name, wire.record));
}
