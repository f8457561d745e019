/**
 * What every view of the console gets: the token (this tab's sessionStorage only), requests to
 * the API with it in the Authorization header, streams whose state the header shows, and the
 * server's settings the page was served with.
 */
import type { SseMessage } from "../src/http/sse.js";
import { type Connection, follow, problemDetail } from "./stream.js";

export interface Settings {
  heartbeatMs: number;
  maxSkewMs: number;
  historyTerms: number;
}

export interface App {
  settings: Settings;
  /** GET `path` (relative to the API's root) with the token; a 401 asks for a token and throws. */
  get<T>(path: string): Promise<T>;
  /** Follows a stream until the view leaves; its state is shown in the header. */
  follow(path: string, resume: boolean, onMessage: (message: SseMessage) => void): void;
  /** Runs `fn` every `ms` while the view is shown. */
  every(ms: number, fn: () => void): void;
}

/** A view draws into `main`; what it starts through `app` stops when the route changes. */
export type View = (app: App, main: HTMLElement, arg: string) => void;

const TOKEN_KEY = "leasehold.console.token";

export function storedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string | null): void {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** Thrown by `get` for an answer the view should show as it is (403, 404, ...). */
export class Refused extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
  }
}

export interface Shell {
  settings: Settings;
  /** The API's root: the console is served at <root>/ui. */
  root: URL;
  showConnection(connection: Connection): void;
  askForToken(why: string): void;
}

/** The App of one view; `stop` ends everything it started. */
export function viewApp(shell: Shell): { app: App; stop: () => void } {
  const stops: Array<() => void> = [];
  let stopped = false;
  const url = (path: string) => new URL(path, shell.root).href;
  const app: App = {
    settings: shell.settings,
    async get<T>(path: string): Promise<T> {
      const token = storedToken();
      const res = await fetch(url(path), {
        headers: token ? { authorization: `Bearer ${token}` } : {},
        cache: "no-store",
      });
      if (res.status === 401) {
        shell.askForToken(token ? "The server did not accept that token." : "This server needs a token to read.");
        throw new Refused(401, await problemDetail(res));
      }
      if (!res.ok) throw new Refused(res.status, await problemDetail(res));
      return (await res.json()) as T;
    },
    follow(path, resume, onMessage) {
      if (stopped) return;
      stops.push(
        follow({
          url: url(path),
          token: storedToken,
          resume,
          // Two keep-alive intervals and a little: one lost comment is not yet "stale".
          staleMs: shell.settings.heartbeatMs * 2 + 2000,
          onMessage,
          onConnection: (connection) => {
            if (stopped) return;
            if (connection.state === "refused" && connection.status === 401) {
              shell.askForToken(
                storedToken() ? "The server did not accept that token." : "This server needs a token to read.",
              );
              return;
            }
            shell.showConnection(connection);
          },
        }),
      );
    },
    every(ms, fn) {
      const timer = setInterval(fn, ms);
      stops.push(() => clearInterval(timer));
    },
  };
  return {
    app,
    stop: () => {
      stopped = true;
      for (const s of stops.splice(0)) s();
    },
  };
}
