/**
 * The API app in process (hono's `app.request` style): requests go straight to `app.fetch`, with
 * no socket, for every test that needs no real connection (timeouts, signals and the listener's
 * own answers keep a real server: test/support/api-server.ts). Same tokens as the real server's.
 */
import { type AppOptions, createApp } from "../../src/api/app.js";
import { MemoryStore } from "../../src/backends/memory/store.js";
import { LeaseholdClient } from "../../src/http/client.js";
import type { LeaseStore } from "../../src/lease.js";
import { TOKEN_SCOPES } from "./api-server.js";

/** What the requests' URLs start with: a loopback address, as a local client would send. */
export const IN_PROCESS_URL = "http://127.0.0.1:8787";

export function inProcessApi(options: Partial<AppOptions> & { store?: LeaseStore } = {}) {
  const store = options.store ?? new MemoryStore();
  const app = createApp({ auth: { tokens: TOKEN_SCOPES }, ...options, store });
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const res = await app.fetch(new Request(input, init));
    const signal = init?.signal;
    if (!signal || !res.body) return res;
    // As a real fetch does: aborting the request errors its body and cancels the app's stream
    // (what a closed connection does to a real server's response).
    const reader = res.body.getReader();
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        controller = c;
      },
      pull: async (c) => {
        const { value, done } = await reader.read();
        if (done) c.close();
        else c.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
    const abort = () => {
      controller.error(signal.reason);
      void reader.cancel(signal.reason).catch(() => undefined);
    };
    if (signal.aborted) abort();
    else signal.addEventListener("abort", abort, { once: true });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  }) as typeof globalThis.fetch;
  return {
    app,
    store,
    url: IN_PROCESS_URL,
    fetch,
    client: (token?: string, instance?: string) =>
      new LeaseholdClient({
        baseUrl: IN_PROCESS_URL,
        fetch,
        ...(token ? { token } : {}),
        ...(instance ? { instance } : {}),
      }),
  };
}
