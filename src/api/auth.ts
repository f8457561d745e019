/**
 * Bearer tokens, each scoped to lease-name prefixes and verbs. Tokens are compared as SHA-256
 * digests in constant time (no early exit, same length), so response timing reveals nothing
 * about a token; a token is never logged or echoed.
 */
import { z } from "zod";
import { LeaseValidationError } from "../errors.js";
import { prefixSchema, zodIssues } from "../lease.js";

export type Verb = "read" | "write";

export interface TokenScope {
  /** A label for logs and metrics (never the token). */
  name?: string;
  token: string;
  /** Lease-name prefixes this token may touch; "" = all. */
  prefixes: string[];
  verbs: Verb[];
}

export type AuthConfig = { tokens: TokenScope[] } | { insecureNoAuth: true };

const tokenScopeSchema = z.strictObject({
  name: z.string().max(64).optional(),
  token: z.string().min(16, { error: "expected a token of at least 16 characters" }).max(512),
  prefixes: z.array(prefixSchema).min(1, { error: 'expected at least one prefix ("" for all leases)' }),
  verbs: z.array(z.enum(["read", "write"])).min(1, { error: "expected read and/or write" }),
});

export const authConfigSchema = z.union([
  z.strictObject({ tokens: z.array(tokenScopeSchema) }),
  z.strictObject({ insecureNoAuth: z.literal(true) }),
]);

/** Parses `LEASEHOLD_TOKENS`: a JSON array of `{ name?, token, prefixes, verbs }`. */
export function parseTokens(json: string): TokenScope[] {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new LeaseValidationError("LEASEHOLD_TOKENS", [
      { path: "", message: 'expected JSON: [{"token":"...","prefixes":["adapters/"],"verbs":["read","write"]}]' },
    ]);
  }
  const parsed = z.array(tokenScopeSchema).safeParse(value);
  if (!parsed.success) throw new LeaseValidationError("LEASEHOLD_TOKENS", zodIssues(parsed.error));
  return parsed.data as TokenScope[];
}

/** Who a request is: a token's scope, or anyone when auth is off (loopback, local use). */
export type Principal = { kind: "token"; scope: TokenScope } | { kind: "anyone" };

export type AuthResult<T> = { ok: true; value: T } | { ok: false; status: 401 | 403; detail: string };

interface HashedScope {
  digest: Uint8Array;
  scope: TokenScope;
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

function equalDigests(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}

/**
 * `Authorization: Bearer <token>`. The scheme is case-insensitive (RFC 9110 §11.1: "bearer" and
 * "BEARER" are the same scheme); the token is taken as sent, after one or more spaces.
 */
const BEARER = /^bearer +([\x21-\x7e]+)$/i;

export class Authorizer {
  private hashed: Promise<HashedScope[]> | undefined;

  constructor(private readonly config: AuthConfig) {
    const parsed = authConfigSchema.safeParse(config);
    if (!parsed.success) throw new LeaseValidationError("auth config", zodIssues(parsed.error));
  }

  /** True when tokens are required: what the OpenAPI document declares as its security. */
  get secured(): boolean {
    return "tokens" in this.config;
  }

  /**
   * Authentication: who sent `Authorization`, or 401. Needs nothing but the header, so the server
   * does it before it reads or validates anything else of the request.
   */
  async authenticate(header: string | undefined): Promise<AuthResult<Principal>> {
    if ("insecureNoAuth" in this.config) return { ok: true, value: { kind: "anyone" } };
    const match = BEARER.exec(header ?? "");
    if (!match) return { ok: false, status: 401, detail: "send Authorization: Bearer <token>" };
    const digest = await sha256(match[1]!);
    this.hashed ??= Promise.all(
      this.config.tokens.map(async (scope) => ({ digest: await sha256(scope.token), scope })),
    );
    let found: TokenScope | undefined;
    // Compare against every token so the time taken does not depend on which one matched.
    for (const h of await this.hashed) if (equalDigests(h.digest, digest) && !found) found = h.scope;
    if (!found) return { ok: false, status: 401, detail: "unknown bearer token" };
    return { ok: true, value: { kind: "token", scope: found } };
  }

  /** Authorization: may `principal` do `verb` on `lease` (a name, or a prefix for listings)? Else 403. */
  authorize(principal: Principal, verb: Verb, lease: string): AuthResult<string> {
    if (principal.kind === "anyone") return { ok: true, value: "insecure" };
    const { scope } = principal;
    if (!scope.verbs.includes(verb)) return { ok: false, status: 403, detail: `this token may not ${verb}` };
    if (!scope.prefixes.some((p) => lease.startsWith(p))) {
      return { ok: false, status: 403, detail: `this token may not ${verb} "${lease}": outside its lease prefixes` };
    }
    return { ok: true, value: scope.name ?? "token" };
  }
}
