/**
 * Follows a Server-Sent Events route with `fetch`, so the token travels in the Authorization
 * header (EventSource cannot send one, and a token in a URL ends up in logs and histories). The
 * body is read by the same SSE reader as the library's client (src/http/sse.ts, eventsource-parser).
 *
 * It reconnects by itself with a growing pause (0.5 s to 5 s), sending `Last-Event-ID` where the
 * route resumes by it (a lease's watch), and reports plainly what state it is in. "Stale" is no
 * byte at all (not even the server's keep-alive comment) for `staleMs`: the connection is then
 * dropped and made again, since a proxy or a sleeping laptop can leave a dead one looking open.
 */
import { systemClock } from "../src/clock.js";
import { readSse, type SseMessage } from "../src/http/sse.js";

export type Connection =
  | { state: "connecting"; since: number }
  | { state: "live"; since: number }
  | { state: "disconnected"; since: number; retryAt: number; why: string }
  /** An answer retrying cannot change (401, 403, 400, 404): the view says what to do. */
  | { state: "refused"; status: number; detail: string };

export interface FollowOptions {
  url: string;
  token: () => string | null;
  /** Send the last event's id as Last-Event-ID on reconnects. */
  resume: boolean;
  staleMs: number;
  onMessage: (message: SseMessage) => void;
  onConnection: (connection: Connection) => void;
}

export function authHeaders(token: string | null): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** The `detail` of a problem answer, or the status line. */
export async function problemDetail(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as { detail?: unknown };
    if (typeof body.detail === "string") return body.detail;
  } catch {
    // not a problem document
  }
  return `${res.status} ${res.statusText}`.trim();
}

/** Follows `options.url` until the returned function is called. */
export function follow(options: FollowOptions): () => void {
  const stopped = new AbortController();
  void run(options, stopped.signal);
  return () => stopped.abort();
}

async function run(o: FollowOptions, stopped: AbortSignal): Promise<void> {
  let lastId: string | undefined;
  let attempt = 0;
  /** When the last good connection ended: what "disconnected since" means. */
  let lostAt: number | undefined;
  while (!stopped.aborted) {
    const connection = new AbortController();
    const stop = () => connection.abort();
    stopped.addEventListener("abort", stop, { once: true });
    o.onConnection({ state: "connecting", since: lostAt ?? Date.now() });
    let why = "the server cannot be reached";
    try {
      const headers: Record<string, string> = { accept: "text/event-stream", ...authHeaders(o.token()) };
      if (o.resume && lastId !== undefined) headers["last-event-id"] = lastId;
      const res = await fetch(o.url, { headers, signal: connection.signal, cache: "no-store" });
      if (!res.ok || !res.body) {
        const detail = await problemDetail(res);
        if (res.status < 500 && res.status !== 429 && res.status !== 408) {
          o.onConnection({ state: "refused", status: res.status, detail });
          return;
        }
        why = `the server answered ${res.status}: ${detail}`;
      } else {
        attempt = 0;
        lostAt = undefined;
        let heard = Date.now();
        o.onConnection({ state: "live", since: heard });
        let quiet = false;
        const watchdog = setInterval(() => {
          if (Date.now() - heard <= o.staleMs) return;
          quiet = true;
          connection.abort();
        }, 500);
        const body = res.body.pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, out) {
              heard = Date.now();
              out.enqueue(chunk);
            },
          }),
        );
        try {
          for await (const message of readSse(body)) {
            if (message.id !== undefined) lastId = message.id;
            o.onMessage(message);
          }
          why = "the server closed the stream";
        } catch {
          why = quiet
            ? `no word from the server for ${Math.round(o.staleMs / 1000)} s (not even a keep-alive)`
            : "the connection broke";
        } finally {
          clearInterval(watchdog);
        }
        lostAt = Date.now();
      }
    } catch {
      // fetch itself failed: nothing listens there (a restart), or the network is down
    } finally {
      stopped.removeEventListener("abort", stop);
    }
    if (stopped.aborted) return;
    lostAt ??= Date.now();
    const delay = Math.min(5000, 500 * 2 ** attempt++);
    o.onConnection({ state: "disconnected", since: lostAt, retryAt: Date.now() + delay, why });
    // The library's sleep, which takes its abort listener off again when the pause ends: the
    // stream's long-lived signal would otherwise gather one per reconnect.
    await systemClock.sleep(delay, stopped);
  }
}
