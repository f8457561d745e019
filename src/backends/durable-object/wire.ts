/**
 * What the Durable Object store (./store.ts) and its objects (./object.ts) share: the slice of the
 * Workers runtime they use, declared here (no @cloudflare/workers-types, no `cloudflare:` imports,
 * so both also type-check and load on Node), and the wire format between them (one deployment, so
 * versioned only by code). Runtime-neutral.
 */

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

export type WebSocketPairConstructor = new () => { 0: WorkerWebSocket; 1: WorkerWebSocket };

// ---- Wire format between the store and the objects.

/** The directory's own object name: "~" is outside the lease name alphabet, so no lease can collide. */
export const INDEX_OBJECT = "~index";
export const ORIGIN = "https://lease.object";
/** Default names per directory page, which is also how many records `list` reads in parallel. */
export const INDEX_PAGE = 100;
export const MAX_INDEX_PAGE = 1000;

/** A stored lease as the objects send it: the record still to be checked by the store. */
export interface StoredWire {
  record: unknown;
  revision: string;
}
