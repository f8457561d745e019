/**
 * The server's operational log: one line per request answered with 5xx (503 included), per store
 * failure, and per change of a lease's holder that this server wrote. Text (`leasehold: ...
 * key=value`) or JSON lines (LEASEHOLD_LOG=json), written with `console.error`, which every runtime
 * has (Node's stderr, Lambda's CloudWatch, Workers' logs).
 *
 * What never appears: tokens (nothing here reads the Authorization header), and a backend's own
 * error message, which can carry file paths, endpoints or credentials in URLs: a store failure is
 * logged by its error class, its code (SQLITE_BUSY, ECONNRESET, an HTTP status) and ambiguity.
 * Runtime-neutral.
 */

export type LogFormat = "text" | "json";
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface ApiLogger {
  error(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
}

/** Discards everything: what `createApp` uses unless a runtime passes a logger. */
export const silentLogger: ApiLogger = { error: () => undefined, info: () => undefined };

export type LogLevel = "error" | "info";

/** Node's entries: everything on stderr, stdout being for results (`serve --json`). */
const toStderr = (line: string) => console.error(line);

/** Where the platform keeps levels apart (Lambda, Workers): info as info, errors as errors. */
export const byLevel = (line: string, level: LogLevel) =>
  level === "error" ? console.error(line) : console.info(line);

export function createLogger(
  format: LogFormat,
  write: (line: string, level: LogLevel) => void = toStderr,
  now: () => number = Date.now,
): ApiLogger {
  const emit = (level: LogLevel, message: string, fields: LogFields = {}) => {
    const defined = Object.entries(fields).filter(([, v]) => v !== undefined);
    if (format === "json") {
      write(
        JSON.stringify({ time: new Date(now()).toISOString(), level, msg: message, ...Object.fromEntries(defined) }),
        level,
      );
      return;
    }
    const pairs = defined.map(([k, v]) => `${k}=${typeof v === "string" && /[\s"=]/.test(v) ? JSON.stringify(v) : v}`);
    write(
      `leasehold: ${level === "error" ? "error: " : ""}${message}${pairs.length ? ` ${pairs.join(" ")}` : ""}`,
      level,
    );
  };
  return { error: (m, f) => emit("error", m, f), info: (m, f) => emit("info", m, f) };
}

/** What may be said about a failure without its message: class, code, status, ambiguity. */
export function failureFields(error: unknown): LogFields {
  const e = error as { name?: unknown; code?: unknown; ambiguous?: unknown; cause?: unknown } | null;
  const cause = (e?.cause ?? null) as {
    code?: unknown;
    name?: unknown;
    $metadata?: { httpStatusCode?: unknown };
  } | null;
  const code = [e?.code, cause?.code, cause?.$metadata?.httpStatusCode, cause?.name].find(
    (c) => (typeof c === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(c)) || typeof c === "number",
  );
  return {
    error: typeof e?.name === "string" ? e.name : typeof error,
    ...(code === undefined ? {} : { code: code as string | number }),
    ...(typeof e?.ambiguous === "boolean" ? { ambiguous: e.ambiguous } : {}),
  };
}
