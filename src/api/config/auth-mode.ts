/**
 * Who may call the API, decided once for every entry and for the library's `serve()`: bearer
 * tokens; or no auth, either because the server is bound to loopback and has no tokens, or
 * because it was asked for explicitly. Tokens together with that request are a contradiction.
 * Runtime-neutral.
 */

import type { FieldIssue } from "../../errors.js";
import type { AuthConfig, TokenScope } from "../auth.js";

export type AuthMode =
  | { mode: "tokens"; tokens: TokenScope[] }
  /** No tokens, bound to loopback: the default of `npm start` and `leasehold serve`. */
  | { mode: "none"; because: "loopback"; host: string }
  /** Explicitly off: `flag` is how it was asked for (LEASEHOLD_INSECURE_NO_AUTH=1, --insecure-no-auth). */
  | { mode: "none"; because: "insecure-flag"; flag: string };

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1)$/;

export function isLoopback(host: string): boolean {
  return LOOPBACK.test(host);
}

export interface AuthInputs {
  tokens: TokenScope[] | undefined;
  insecure: boolean;
  /** The address bound; undefined where nothing is bound (Lambda, Worker): no loopback default there. */
  host: string | undefined;
  /** Who is reachable by anyone when nothing is bound, for the message: "the Worker". */
  server?: string;
}

export interface AuthNames {
  /** How the tokens were given (LEASEHOLD_TOKENS, or `tokens` for a library caller). */
  tokens: string;
  /** How auth was turned off (LEASEHOLD_INSECURE_NO_AUTH=1, --insecure-no-auth, insecureNoAuth). */
  insecure: string;
  /** What to tell a user who has neither: "LEASEHOLD_INSECURE_NO_AUTH=1 ... (behind IAM auth only)". */
  insecureHint: string;
}

/**
 * Tokens: auth on. The insecure flag: auth off, and refused together with tokens (which would be
 * meant to protect something). Neither: off only when bound to loopback; refused elsewhere and on
 * Lambda and Workers, which are reachable by anyone.
 */
export function resolveAuth(input: AuthInputs, names: AuthNames): { auth: AuthMode } | { issue: FieldIssue } {
  const tokens = input.tokens && input.tokens.length > 0 ? input.tokens : undefined;
  if (tokens && input.insecure) {
    const n = tokens.length;
    return {
      issue: {
        path: names.tokens,
        message: `${n} token${n === 1 ? "" : "s"} given together with ${names.insecure}: tokens ask for auth, the flag turns it off; unset one of them`,
      },
    };
  }
  if (tokens) return { auth: { mode: "tokens", tokens } };
  if (input.insecure) return { auth: { mode: "none", because: "insecure-flag", flag: names.insecure } };
  if (input.host !== undefined && isLoopback(input.host)) {
    return { auth: { mode: "none", because: "loopback", host: input.host } };
  }
  const where =
    input.host !== undefined
      ? `refusing to serve on ${input.host} without tokens`
      : `not set: ${input.server ?? "the API"} is reachable by anyone, so it needs tokens`;
  return { issue: { path: names.tokens, message: `${where}: set ${names.tokens}, or ${names.insecureHint}` } };
}

/** What createApp takes. */
export function authConfig(auth: AuthMode): AuthConfig {
  return auth.mode === "tokens" ? { tokens: auth.tokens } : { insecureNoAuth: true };
}

/** The auth mode in words, with the tokens' names and scopes but never a token. */
export function describeAuth(auth: AuthMode): string {
  if (auth.mode === "tokens") {
    const scopes = auth.tokens.map((t, i) => {
      const prefixes = t.prefixes.map((p) => (p === "" ? "all leases" : JSON.stringify(p))).join(", ");
      return `${t.name ?? `#${i + 1}`}: ${t.verbs.join("+")} on ${prefixes}`;
    });
    const n = auth.tokens.length;
    return `${n} token${n === 1 ? "" : "s"} (${scopes.join("; ")})`;
  }
  if (auth.because === "loopback") {
    return `none, because LEASEHOLD_TOKENS is unset and the server is bound to loopback ${auth.host} (any local process can take any lease)`;
  }
  return `none, because of ${auth.flag} (anyone who can reach this server can take any lease)`;
}
