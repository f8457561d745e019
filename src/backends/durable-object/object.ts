/**
 * `LeaseObject`, the Durable Object class behind the Durable Object store (./store.ts): export it
 * from the Worker entry and bind it, e.g. as `LEASES` (wrangler.toml). One object per lease
 * (`namespace.idFromName(name)`), so every lease has exactly one single-threaded owner that all
 * Worker instances, in every location, talk to.
 *
 * It keeps the lease as `{ record, rev }` under one storage key and a copy in memory, loaded once
 * inside `blockConcurrencyWhile`. A CAS is one request: the check against the in-memory copy and
 * the update happen in the same synchronous step, so no other request can interleave; the storage
 * write is covered by the output gate (no response and no broadcast leaves the object before the
 * write is durable; a failed write resets the object). `rev` is a counter, the revision is its
 * decimal string. Watchers connect by WebSocket with the hibernation API (`acceptWebSocket`): each
 * gets the current record at once and then every committed change, so a release reaches followers
 * on every Worker instance without polling. The object named `~index` (not a valid lease name)
 * plays the directory: an append-only, sorted set of lease names, which is enough because records
 * are never deleted. Runtime-neutral (./wire.ts).
 */

import { isLeaseValidationError, LeaseValidationError } from "../../errors.js";
import { type LeaseRecord, validatePrefix, validateRecord, validateRecordName } from "../../lease.js";
import { parseRevision } from "../revision.js";
import {
  type DurableObjectStateLike,
  INDEX_PAGE,
  MAX_INDEX_PAGE,
  type StoredWire,
  type WebSocketPairConstructor,
  type WorkerWebSocket,
} from "./wire.js";

const RECORD_KEY = "lease";
const NAME_KEY = "n:";

interface Entry {
  record: LeaseRecord;
  rev: number;
}

const toWire = (entry: Entry | undefined): StoredWire | null =>
  entry ? { record: entry.record, revision: String(entry.rev) } : null;

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

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
    const name = validateRecordName((body as { name?: unknown } | null)?.name);
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
