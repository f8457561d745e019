/**
 * Zod schemas for environment variables, one per kind of value: the server configuration
 * (./policy.ts) and infra/aws's deploy settings are built from them, so the same kind of value is
 * read, and refused, the same way everywhere. Each refusal says what was expected and the value
 * given (except for tokens, which are never echoed). Runtime-neutral.
 */
import { z } from "zod";
import { describeIssues, isLeaseValidationError, LeaseValidationError } from "../../errors.js";
import { zodIssues } from "../../lease.js";
import { parseStoreUrl, type StoreUrl } from "../../open-store.js";
import { parseTokens, type TokenScope } from "../auth.js";
import { type Bounds, expectation } from "../options.js";

/** An environment object: process.env, a function's environment, a Worker's bindings. */
export type Env = Readonly<Record<string, unknown>>;

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * A variable's text. Unset and "" both mean unset; a number (a wrangler `[vars]` entry written
 * without quotes arrives as one) counts as its decimal digits; anything else is refused.
 */
export const envText = z.preprocess(
  (value) => (value === undefined || value === "" ? undefined : typeof value === "number" ? String(value) : value),
  z.string({ error: (issue) => `expected a string, got ${kindOf(issue.input)}` }).optional(),
);

type Parse<T> = (value: string) => { ok: true; value: T } | { ok: false; message: string };

/** A variable read by `parse`; unset stays undefined. */
export function envField<T>(parse: Parse<T>) {
  return envText.transform((value, ctx): T | undefined => {
    if (value === undefined) return undefined;
    const result = parse(value);
    if (result.ok) return result.value;
    ctx.addIssue({ code: "custom", message: result.message });
    return z.NEVER;
  });
}

/** A whole number within `bounds`: "expected a whole number of milliseconds 0-60000, got "1s"". */
export function envWholeNumber(bounds: Bounds) {
  return envField((text) => {
    const n = Number(text);
    return /^\d+$/.test(text) && n >= bounds.min && n <= bounds.max
      ? { ok: true, value: n }
      : { ok: false, message: `${expectation(bounds)}, got ${JSON.stringify(text)}` };
  });
}

/** One of a few words. */
export function envChoice<const T extends string>(choices: readonly T[], meaning = "") {
  const list = choices.map((c) => JSON.stringify(c)).join(" or ");
  return envField((text) =>
    (choices as readonly string[]).includes(text)
      ? { ok: true, value: text as T }
      : { ok: false, message: `expected ${list}${meaning}, got ${JSON.stringify(text)}` },
  );
}

/** Text matching `pattern`, described by `what` in the message. */
export function envMatching(pattern: RegExp, what: string) {
  return envField((text) =>
    pattern.test(text)
      ? { ok: true, value: text }
      : { ok: false, message: `expected ${what}, got ${JSON.stringify(text)}` },
  );
}

/** LEASEHOLD_TOKENS: the API's own parser; messages point into the array, never echo a token. */
export const envTokens = envField<TokenScope[]>((text) => {
  let tokens: TokenScope[];
  try {
    tokens = parseTokens(text);
  } catch (error) {
    if (!isLeaseValidationError(error)) throw error;
    return {
      ok: false,
      message: describeIssues(error.issues.map((i) => ({ ...i, path: i.path.replace(/^(\d+)/, "[$1]") }))),
    };
  }
  if (tokens.length === 0) return { ok: false, message: "expected at least one token, got []" };
  return { ok: true, value: tokens };
});

/** A store URL, described by the URL parser (which names the wrong part; the URL is not echoed). */
export const envStoreUrl = envField<StoreUrl & { url: string }>((text) => {
  try {
    return { ok: true, value: { ...parseStoreUrl(text), url: text } };
  } catch (error) {
    if (!isLeaseValidationError(error)) throw error;
    return { ok: false, message: describeIssues(error.issues) };
  }
});

export const envSqlitePath = envField((text) => {
  try {
    parseStoreUrl(`sqlite:${text}`);
    return { ok: true, value: text };
  } catch {
    return { ok: false, message: `expected a file path such as ./data/leasehold.db, got ${JSON.stringify(text)}` };
  }
});

/**
 * Parses `env` with a schema of variables (infra/aws's deploy settings use this with the fields
 * above); throws `LeaseValidationError(what, ...)` naming each variable that is wrong.
 */
export function readVariables<S extends z.ZodType>(what: string, schema: S, env: Env): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  throw new LeaseValidationError(what, zodIssues(result.error));
}
