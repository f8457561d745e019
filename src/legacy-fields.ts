/**
 * Records written by leasehold 0.1.0 kept protocol state in reserved metadata keys (docs/design.md
 * §1 "Protocol fields"): the API's instance digests under `leasehold.instance` and
 * `leasehold.next-instance`, a bound lease's session and successor under `leasehold.session` and
 * `leasehold.next` (escaped as `proxied.leasehold.*` by the HTTP store, and so in an API's store).
 * A store read lifts them into the typed fields, so such a record is read as what it means and
 * the next write of it stores the typed form (the migration). A value that does not parse is left
 * where it is, and the record's validation then refuses it as corrupt, naming the key.
 * Pure and runtime-neutral: it only moves values between plain objects.
 */

type Lift = (value: string) => unknown;

const ref: Lift = (value) => {
  const at = value.lastIndexOf("@");
  const term = Number(value.slice(at + 1));
  if (at <= 0 || !/^[1-9][0-9]{0,15}$/.test(value.slice(at + 1)) || !Number.isSafeInteger(term)) return undefined;
  return { name: value.slice(0, at), term };
};

const successor: Lift = (value) => {
  const space = value.indexOf(" ");
  const session = space > 0 ? ref(value.slice(0, space)) : undefined;
  return session && space < value.length - 1 ? { holder: value.slice(space + 1), session } : undefined;
};

const digest: Lift = (value) => value;

/** Each legacy key: the typed field it becomes (a path), and how its value reads. */
const LEGACY: ReadonlyArray<[key: string, path: readonly string[], lift: Lift]> = [
  ["leasehold.instance", ["holderDigest"], digest],
  ["leasehold.next-instance", ["successorDigest"], digest],
  ["leasehold.session", ["session"], ref],
  ["leasehold.next", ["successor"], successor],
  ["proxied.leasehold.session", ["session"], ref],
  ["proxied.leasehold.next", ["successor"], successor],
  ["proxied.leasehold.instance", ["upstream", "holderDigest"], digest],
  ["proxied.leasehold.next-instance", ["upstream", "successorDigest"], digest],
];

/** `raw` with 0.1.0's reserved metadata keys moved into the record's typed fields (see the header). */
export function liftLegacyFields(raw: unknown): unknown {
  if (typeof raw !== "object" || raw === null) return raw;
  const record = raw as Record<string, unknown>;
  const metadata = record.metadata;
  if (typeof metadata !== "object" || metadata === null) return raw;
  const m = metadata as Record<string, unknown>;
  if (!LEGACY.some(([key]) => typeof m[key] === "string")) return raw;
  const out: Record<string, unknown> = { ...record, metadata: { ...m } };
  const rest = out.metadata as Record<string, unknown>;
  for (const [key, path, lift] of LEGACY) {
    const value = rest[key];
    if (typeof value !== "string") continue;
    // A released record never carried its session or successor on: 0.1.0 dropped them on release.
    const stale = out.holder === null && (path[0] === "session" || path[0] === "successor");
    const lifted = stale ? null : lift(value);
    if (lifted === undefined) continue;
    delete rest[key];
    if (lifted === null) continue;
    if (path.length === 1) out[path[0]!] ??= lifted;
    else out[path[0]!] = { [path[1]!]: lifted, ...(out[path[0]!] as object | undefined) };
  }
  return out;
}
