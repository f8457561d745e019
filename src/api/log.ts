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
        escapeUnsafe(
          JSON.stringify({ time: new Date(now()).toISOString(), level, msg: message, ...Object.fromEntries(defined) }),
        ),
        level,
      );
      return;
    }
    const pairs = defined.map(([k, v]) => {
      if (typeof v !== "string") return `${k}=${v}`;
      const safe = escapeUnsafe(v);
      return `${k}=${safe !== v || /[\s"=]/.test(v) ? escapeUnsafe(JSON.stringify(v)) : v}`;
    });
    write(
      `leasehold: ${level === "error" ? "error: " : ""}${message}${pairs.length ? ` ${pairs.join(" ")}` : ""}`,
      level,
    );
  };
  return { error: (m, f) => emit("error", m, f), info: (m, f) => emit("info", m, f) };
}

/**
 * Characters a value (a holder, a lease name in a message) could use to forge or hide log lines:
 * control characters (C0, DEL, C1), the Unicode line and paragraph separators, and the
 * bidirectional controls that reorder what a reader sees. Each is written as a \uXXXX escape,
 * which reads the same in both formats (in JSON it is the same string).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this escapes
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function escapeUnsafe(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
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
