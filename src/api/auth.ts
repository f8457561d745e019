/**
 * Bearer tokens, each scoped to verbs and to name prefixes (docs/security.md). Tokens are compared
 * as SHA-256 digests in constant time (no early exit, same length), so response timing reveals
 * nothing about a token; a token is never logged or echoed.
 *
 * Verbs: `read` (get, list, watch), `write` (acquire, renew, release, and the group routes),
 * `cas` (the raw compare-and-swap PUT, for the HTTP store; not implied by `write`), `metrics`
 * (GET /metrics, once the server has tokens) and `force` (an operator's clearing of a record the
 * server cannot read or judge, `leasehold release --force`; implied by nothing).
 *
 * A prefix is a path, and means what an operator reads in it: "" covers every name; a prefix
 * ending in "/" covers every name under it; any other prefix is a name and covers that name and
 * the names under it (`adapters/bill` covers `adapters/bill` and `adapters/bill/x`, never
 * `adapters/billboard`; `<group>/_members/m1` is a token for member m1 alone).
 */
import { z } from "zod";
import { LeaseValidationError } from "../errors.js";
import { NAME_PATTERN, prefixSchema, RECORD_NAME_PATTERN, zodIssues } from "../lease.js";

export const VERBS = ["read", "write", "cas", "metrics", "force"] as const;
export type Verb = (typeof VERBS)[number];

export interface TokenScope {
  /** A label for logs and metrics (never the token). */
  name?: string;
  token: string;
  /** Name prefixes this token may touch; "" = all. */
  prefixes: string[];
  verbs: Verb[];
}

export type AuthConfig = { tokens: TokenScope[] } | { insecureNoAuth: true };

/** A token is what `Authorization: Bearer <token>` can carry: printable ASCII without spaces. */
const TOKEN_PATTERN = /^[\x21-\x7e]+$/;

/**
 * "" (everything), a name (it and the names under it), a name and "/" (the names under it), or a
 * protocol record's name (that record alone: `<group>/_members/<id>` for one member).
 */
function isScopePrefix(prefix: string): boolean {
  return (
    prefix === "" ||
    NAME_PATTERN.test(prefix.endsWith("/") ? prefix.slice(0, -1) : prefix) ||
    RECORD_NAME_PATTERN.test(prefix)
  );
}

const tokenScopeSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,64}$/, { error: "expected 1-64 characters of A-Z a-z 0-9 . _ : -" })
    .optional(),
  token: z
    .string({ error: "expected a string" })
    .min(16, { error: "expected a token of at least 16 characters" })
    .max(512, { error: "expected a token of at most 512 characters" })
    .regex(TOKEN_PATTERN, {
      error: "expected printable ASCII without spaces (what an Authorization: Bearer header can carry)",
    }),
  prefixes: z
    .array(
      prefixSchema.refine(isScopePrefix, {
        error:
          'expected "" (all names), a name (it and the names under it, such as adapters/billing), a name followed by "/" (the names under it), or a protocol record\'s name (that record alone, such as adapters/billing/_members/m1)',
      }),
    )
    .min(1, { error: 'expected at least one prefix ("" for all names)' }),
  verbs: z
    .array(z.enum(VERBS, { error: `expected ${VERBS.join(", ")}` }))
    .min(1, { error: `expected at least one of ${VERBS.join(", ")}` }),
});

/** Tokens, each listed once: a token listed twice would let the first scope win unseen. */
const tokenListSchema = z.array(tokenScopeSchema).superRefine((tokens, ctx) => {
  const seen = new Map<string, number>();
  const names = new Map<string, number>();
  tokens.forEach((t, i) => {
    const first = seen.get(t.token);
    if (first !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: [i, "token"],
        message: `the same token as [${first}]: list each token once, with all its prefixes and verbs`,
      });
    } else seen.set(t.token, i);
    if (t.name === undefined) return;
    const named = names.get(t.name);
    if (named !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: [i, "name"],
        message: `the same name as [${named}]: names tell tokens apart in logs`,
      });
    } else names.set(t.name, i);
  });
});

export const authConfigSchema = z.union([
  z.strictObject({ tokens: tokenListSchema }),
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
  const parsed = tokenListSchema.safeParse(value);
  if (!parsed.success) throw new LeaseValidationError("LEASEHOLD_TOKENS", zodIssues(parsed.error));
  return parsed.data as TokenScope[];
}

/** Does scope prefix `prefix` cover the name `name`? */
export function covers(prefix: string, name: string): boolean {
  if (prefix === "" || prefix.endsWith("/")) return name.startsWith(prefix);
  return name === prefix || name.startsWith(`${prefix}/`);
}

/** Does scope prefix `prefix` cover every name a listing of `listed` can return? */
function coversListing(prefix: string, listed: string): boolean {
  if (prefix === "" || prefix.endsWith("/")) return listed.startsWith(prefix);
  // A listing of `prefix` itself would also return `prefix-2`, `prefixes/...`: not covered.
  return listed.startsWith(`${prefix}/`);
}

/** Who a request is: a token's scope, or anyone when auth is off (loopback, local use). */
export type Principal = { kind: "token"; scope: TokenScope } | { kind: "anyone" };

/** The principal's name for logs: the token's label, "token #i" without one, or "anyone". */
export function principalName(principal: Principal | undefined): string {
  if (!principal) return "none";
  return principal.kind === "anyone" ? "anyone" : (principal.scope.name ?? "unnamed token");
}

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

  /** May `principal` do `verb` on the name `name`? Else 403 naming what is missing. */
  authorize(principal: Principal, verb: Verb, name: string): AuthResult<string> {
    return this.check(principal, verb, name, covers, `"${name}"`);
  }

  /** May `principal` read every name a listing of `prefix` can return? */
  authorizeListing(principal: Principal, prefix: string): AuthResult<string> {
    return this.check(principal, "read", prefix, coversListing, `names starting with "${prefix}"`);
  }

  /** May `principal` use `verb` at all (a route that names no lease: /metrics)? */
  authorizeVerb(principal: Principal, verb: Verb): AuthResult<string> {
    return this.check(principal, verb, "", () => true, "");
  }

  /** The first of the principal's prefixes that covers `name` (its quota's scope), or "" without tokens. */
  scopeOf(principal: Principal, name: string): string | undefined {
    if (principal.kind === "anyone") return "";
    return principal.scope.prefixes.filter((p) => covers(p, name)).sort((a, b) => a.length - b.length)[0];
  }

  /**
   * The tenant `name` belongs to, for a bounded resource shared fairly among tenants (the console's
   * history): the longest prefix of any token that covers it; a name that no narrower prefix than
   * "" covers (every name, without tokens) belongs to its first segment.
   */
  tenantOf(name: string): string {
    let best = "";
    if ("tokens" in this.config) {
      for (const t of this.config.tokens)
        for (const p of t.prefixes) if (p.length > best.length && covers(p, name)) best = p;
    }
    return best || `${name.split("/")[0]}/`;
  }

  private check(
    principal: Principal,
    verb: Verb,
    target: string,
    coverage: (prefix: string, target: string) => boolean,
    what: string,
  ): AuthResult<string> {
    if (principal.kind === "anyone") return { ok: true, value: "insecure" };
    const { scope } = principal;
    if (!scope.verbs.includes(verb)) return { ok: false, status: 403, detail: `this token may not ${verb}` };
    if (!scope.prefixes.some((p) => coverage(p, target))) {
      return { ok: false, status: 403, detail: `this token may not ${verb} ${what}: outside its prefixes` };
    }
    return { ok: true, value: scope.name ?? "token" };
  }
}
