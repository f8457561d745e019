/**
 * What the CLI prints: results on stdout (a table, or JSON with --json), everything else
 * (progress, waiting, errors) on stderr as single lines prefixed "leasehold:", so a script can
 * pipe stdout without filtering.
 */
import { isLeaseholdApiError } from "../http/api-error.js";
import { leaseView } from "../http/lease-view.js";
import type { LeaseView } from "../http/schemas.js";
import type { Stored, Unreadable } from "../lease.js";

/** Where a command writes; the entry passes the process streams, tests may pass buffers. */
export interface CliIo {
  env: Record<string, string | undefined>;
  /** One result line (stdout). */
  out(line: string): void;
  /** One progress or error line (stderr); the "leasehold: " prefix is added here. */
  say(line: string): void;
}

/** Exit codes shared by every command (docs/cli.md). */
export const EXIT_RUNTIME = 1;
export const EXIT_USAGE = 2;
/** EX_TEMPFAIL (sysexits.h): leadership was lost; a supervisor should start the wrapper again. */
export const EXIT_LOST = 75;
/** As in shells: the command could not be executed / was not found. */
export const EXIT_CANNOT_EXECUTE = 126;
export const EXIT_NOT_FOUND = 127;

/** 850ms, 12.3s, 4m05s, 2h03m, 3d04h: short enough for a table column. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)}ms`;
  if (abs < 60_000) return `${(abs / 1000).toFixed(1)}s`;
  const s = Math.floor(abs / 1000);
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${pad(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d${pad(Math.floor((s % 86_400) / 3600))}h`;
}

export type LeaseState = "held" | "expired" | "released";

/**
 * A lease as an operator reads it: the one view of a stored lease (`LeaseView`, as the API shows
 * it), with its state and the time left judged from the writer's `renewedAt` against this
 * machine's wall clock: informational only (electors decide by their own monotonic clocks).
 */
export interface LeaseStatus extends LeaseView {
  state: LeaseState;
  /** `expiresAt - now`: negative once expired; null once released. */
  expiresInMs: number | null;
}

export function statusOf(stored: Stored, now: number): LeaseStatus {
  const view = leaseView(stored);
  const expiresInMs = view.holder === null ? null : view.expiresAt - now;
  const state = expiresInMs === null ? "released" : expiresInMs > 0 ? "held" : "expired";
  return { ...view, state, expiresInMs };
}

/** A record the store holds but cannot read (or, through the API, that the API cannot judge): its name and why. */
export interface UnreadableView {
  name: string;
  state: "unreadable";
  detail: string;
  errors: Array<{ path: string; message: string }>;
}

export function unreadableViewOf(entry: Unreadable): UnreadableView {
  return { name: entry.name, state: "unreadable", detail: entry.unreadable.message, errors: entry.unreadable.issues };
}

/** "12.3s", "expired 4.1s ago" or "released". */
export function describeExpiry(view: LeaseStatus): string {
  if (view.expiresInMs === null) return "released";
  if (view.expiresInMs > 0) return formatDuration(view.expiresInMs);
  return `expired ${formatDuration(view.expiresInMs)} ago`;
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function formatTable(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/**
 * A 401/403 from a leasehold API server, said in terms of what the user sets: LEASEHOLD_TOKEN.
 * `undefined` for any other error. No retry fixes these, so every command ends on them (exit 2).
 */
export function authFailure(error: unknown, env: CliIo["env"]): string | undefined {
  if (!isLeaseholdApiError(error) || (error.status !== 401 && error.status !== 403)) return undefined;
  const detail = error.problem?.detail ?? error.message;
  if (error.status === 403) {
    return `the API refused the token in LEASEHOLD_TOKEN (403: ${detail}); use a token whose prefixes and verbs cover this lease`;
  }
  return env.LEASEHOLD_TOKEN
    ? `the API does not accept the token in LEASEHOLD_TOKEN (401: ${detail}); set LEASEHOLD_TOKEN to one of the server's tokens`
    : `the API requires a token (401: ${detail}); set LEASEHOLD_TOKEN to one of the server's tokens`;
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
