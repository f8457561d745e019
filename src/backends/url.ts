/**
 * What the backends' URL parsers share (./backend.ts): one error shape that names the wrong part
 * (src/open-store.ts adds every accepted form to its message), and the readers of hosts, paths,
 * query parameters and endpoints. Imported as a namespace (`import * as parts from "../url.js"`).
 * Runtime-neutral.
 */
import type { z } from "zod";
import { LeaseValidationError } from "../errors.js";

/** A bad part of a store URL. */
export function invalid(part: string, message: string): LeaseValidationError {
  return new LeaseValidationError("store URL", [{ path: part, message }]);
}

/**
 * Reads the query parameters a scheme allows; any other one is an error naming it. A value must be
 * non-empty and given once.
 */
export function query(url: URL, scheme: string, allowed: readonly string[]): Map<string, string> {
  const params = new Map<string, string>();
  for (const [key, value] of url.searchParams) {
    if (!allowed.includes(key)) {
      throw invalid(
        `query parameter "${key}"`,
        `not understood by ${scheme}: URLs; expected ${allowed.map((a) => `"${a}"`).join(", ")}`,
      );
    }
    if (params.has(key)) throw invalid(`query parameter "${key}"`, "given more than once");
    if (value === "") throw invalid(`query parameter "${key}"`, "expected a value");
    params.set(key, value);
  }
  return params;
}

/** `?endpoint=`: an http(s) URL. */
export function endpoint(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url?.protocol !== "http:" && url?.protocol !== "https:") {
    throw invalid('query parameter "endpoint"', `expected an http(s) URL, got ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * A `scheme://HOST/...` URL: checks the scheme's "//", parses it, refuses a fragment and (unless
 * `credentialsHint` is null) a user:password@. `what` names the URL in messages ("s3 URL").
 */
export function host(text: string, scheme: string, form: string, credentialsHint: string | null): URL {
  if (!text.toLowerCase().startsWith(`${scheme}://`)) throw invalid(`${scheme} URL`, `expected "${form}"`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(`${scheme} URL`, "not a valid URL");
  }
  if (url.hash !== "") throw invalid("fragment", `expected no "#..." part, got ${JSON.stringify(url.hash)}`);
  if (credentialsHint !== null && (url.username !== "" || url.password !== "")) {
    throw invalid("credentials", `expected no user:password@ in the URL; ${credentialsHint}`);
  }
  return url;
}

/** The object-name prefix in a URL's path (decoded), or "" for none. */
export function prefix(url: URL, part: string, path = url.pathname): string {
  let prefix: string;
  try {
    prefix = decodeURIComponent(path.replace(/^\//, ""));
  } catch {
    throw invalid(part, "expected valid percent-encoding");
  }
  if (prefix.startsWith("/") || prefix.includes("//")) {
    throw invalid(part, `expected object name segments without empty parts, got ${JSON.stringify(prefix)}`);
  }
  return prefix;
}

/**
 * Checks one URL part with the field's schema from the backend's options, so a name rule lives
 * once, in the options schema: its message, under the URL part's name.
 */
export function check(schema: z.ZodType, value: unknown, part: string, got = value): void {
  const result = schema.safeParse(value);
  if (!result.success) {
    const message = result.error.issues[0]?.message ?? "invalid";
    throw invalid(part, `${message}, got ${JSON.stringify(got)}`);
  }
}

/** The specs leave out what the URL did not say (src/defined.ts). */
export { defined } from "../defined.js";
