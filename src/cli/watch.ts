/**
 * `leasehold watch NAME`: one line per change of one lease, until SIGINT/SIGTERM. Uses the store's
 * push (`watch`) when it has one, else reads once a second. Expiry is not a write, so no store
 * reports it: a local timer prints "expired" when `renewedAt + leaseMs` passes on this machine's
 * wall clock without a change (informational, like `status`).
 */
import { systemClock } from "../clock.js";
import type { LeaseStore, Stored } from "../lease.js";
import { validateName } from "../lease.js";
import { openStore } from "../open-store.js";
import { authFailure, type CliIo, describeExpiry, errorMessage, statusOf } from "./output.js";

export interface WatchOptions {
  store: string;
  name: string;
  json: boolean;
  /** Poll interval for stores without push. */
  pollMs?: number;
  /** Stops watching when aborted, as SIGINT/SIGTERM/SIGHUP do (for callers in the same process). */
  signal?: AbortSignal;
  /** Called after each poll of a store without push (tests count polls with it). */
  onPoll?: () => void;
}

/** What `leasehold watch` prints a line for. */
export type LeaseChange = "current" | "absent" | "created" | "acquired" | "renewed" | "released" | "expired";

/** What happened between two observations of one lease; `undefined` when nothing changed. */
export function changeOf(previous: Stored | null | undefined, next: Stored | null): LeaseChange | undefined {
  if (previous === undefined) return next ? "current" : "absent";
  if (next === null) return previous === null ? undefined : "absent";
  if (previous === null) return "created";
  if (previous.revision === next.revision) return undefined;
  const [a, b] = [previous.record, next.record];
  if (b.holder === null) return a.holder === null ? "renewed" : "released";
  if (a.holder !== b.holder || a.term !== b.term) return "acquired";
  return "renewed";
}

export async function watchCommand(o: WatchOptions, io: CliIo): Promise<number> {
  const name = validateName(o.name);
  // Read-only: watching a database that does not exist is an error, never a new empty one.
  const store = await openStore(o.store, { env: io.env, create: false });
  const abort = new AbortController();
  const stop = () => abort.abort();
  o.signal?.addEventListener("abort", stop, { once: true });
  // SIGHUP: the terminal went away. EPIPE: whoever read our output is gone. Either way nobody is
  // watching any more, and an orphaned watcher would poll the store forever.
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  for (const s of signals) process.once(s, stop);
  const onStdoutError = () => stop();
  process.stdout.on("error", onStdoutError);
  let last: Stored | null | undefined;
  let expiryTimer: NodeJS.Timeout | undefined;

  const print = (event: LeaseChange, stored: Stored | null) => {
    const time = new Date().toISOString();
    if (o.json) {
      io.out(JSON.stringify({ time, event, name, lease: stored ? statusOf(stored, Date.now()) : null }));
      return;
    }
    if (!stored) {
      io.out(`${time}  ${event.padEnd(8)}  ${name}  (no record)`);
      return;
    }
    const view = statusOf(stored, Date.now());
    const expiry =
      view.state === "released" ? "" : view.state === "held" ? `  expires in ${describeExpiry(view)}` : "  (expired)";
    io.out(`${time}  ${event.padEnd(8)}  ${name}  holder=${view.holder ?? "-"} term=${view.term}${expiry}`);
  };

  const observe = (stored: Stored | null) => {
    const event = changeOf(last, stored);
    if (event === undefined) return;
    last = stored;
    print(event, stored);
    clearTimeout(expiryTimer);
    const r = stored?.record;
    if (r && r.holder !== null) {
      const seen = stored;
      const left = r.renewedAt + r.leaseMs - Date.now();
      expiryTimer = setTimeout(
        () => {
          if (last === seen) print("expired", seen);
        },
        Math.max(0, left),
      );
    }
  };

  try {
    while (!abort.signal.aborted) {
      try {
        if (store.watch) {
          await follow(store, name, abort.signal, observe);
          // The stream ended without being asked to (server restart): reconnect, gently.
          await systemClock.sleep(1000, abort.signal);
        } else {
          await poll(store, name, abort.signal, o.pollMs ?? 1000, observe, o.onPoll);
        }
      } catch (error) {
        if (abort.signal.aborted) break;
        // A refused token stays refused: end (the caller names LEASEHOLD_TOKEN), do not retry forever.
        if (authFailure(error, io.env) !== undefined) throw error;
        io.say(`store error: ${errorMessage(error)}; retrying in 1s`);
        await systemClock.sleep(1000, abort.signal);
      }
    }
    return 0;
  } finally {
    clearTimeout(expiryTimer);
    for (const s of signals) process.off(s, stop);
    o.signal?.removeEventListener("abort", stop);
    process.stdout.off("error", onStdoutError);
    await store.close?.();
  }
}

async function follow(
  store: LeaseStore,
  name: string,
  signal: AbortSignal,
  observe: (s: Stored | null) => void,
): Promise<void> {
  for await (const stored of store.watch!(name, signal)) observe(stored);
}

async function poll(
  store: LeaseStore,
  name: string,
  signal: AbortSignal,
  everyMs: number,
  observe: (s: Stored | null) => void,
  onPoll: (() => void) | undefined,
): Promise<void> {
  while (!signal.aborted) {
    observe(await store.get(name, { signal }));
    onPoll?.();
    await systemClock.sleep(everyMs, signal);
  }
}
