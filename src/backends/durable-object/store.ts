/**
 * Durable Object store for Cloudflare Workers (`leasehold/stores/durable-object`): the `LeaseStore`
 * that talks to the lease objects (`LeaseObject`, ./object.ts, exported here too) through their
 * namespace binding. `put(_, null)` first adds the name to the directory and only then creates the
 * record, so a listing never misses a lease that exists; a name whose create then failed is a
 * directory entry without a record, which `list` skips. `list(prefix)` pages through the directory
 * and reads each record from its own object (strongly consistent, in name order).
 *
 * Errors: a conflict carries the current record (the object has it in memory). A failed call to
 * the object (exception from `stub.fetch`, e.g. a reset or network blip, or a 5xx) is a
 * `LeaseStoreError`, ambiguous for `put` because the object may have committed before the
 * answer was lost; the elector resolves that by `writeId`. The store never retries.
 * Runtime-neutral (./wire.ts).
 */

import { LeaseConflictError, LeaseStoreError, LeaseValidationError } from "../../errors.js";
import type { CallOptions, LeaseRecord, LeaseStore, Listed, ListOptions, Revision, Stored } from "../../lease.js";
import { parseRecord, validate, validatePrefix, validateRecord, validateRecordName } from "../../lease.js";
import { settleUnreadable, storedAt } from "../../listing.js";
import { parseRevision } from "../revision.js";
import { type DurableObjectStoreOptions, durableObjectOptionsSchema } from "./backend.js";
import {
  INDEX_OBJECT,
  INDEX_PAGE,
  type LeaseNamespace,
  ORIGIN,
  type StoredWire,
  type WorkerWebSocket,
} from "./wire.js";

export type { DurableObjectStoreOptions } from "./backend.js";
export { LeaseObject } from "./object.js";
/** The namespace binding's type, to declare a Worker's `env.LEASES`. */
export type { LeaseNamespace } from "./wire.js";

export class DurableObjectStore implements LeaseStore {
  private readonly namespace: LeaseNamespace;
  private readonly pageSize: number;

  constructor(options: DurableObjectStoreOptions) {
    const o = validate("DurableObjectStore options", durableObjectOptionsSchema, options);
    this.namespace = o.namespace;
    this.pageSize = o.listPageSize ?? INDEX_PAGE;
  }

  async get(name: string, options?: CallOptions): Promise<Stored | null> {
    validateRecordName(name);
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
    validateRecordName(name);
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
