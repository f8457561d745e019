/**
 * What the console and its routes may show of a record's metadata. Reserved keys prove who a
 * process is (a remote member's `instance`: whoever reads it can act as that member) and are
 * nobody else's business, so they are left out of every view the console's routes send and of
 * everything the console's page renders (it imports this module too). Runtime-neutral, no imports:
 * it is bundled into the browser client.
 */

/** Metadata keys never shown. */
export const RESERVED_METADATA: readonly string[] = ["instance"];

export function visibleMetadata(metadata: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata)) if (!RESERVED_METADATA.includes(key)) out[key] = value;
  return out;
}

/** A lease view (or anything with metadata) with the reserved keys left out. */
export function withVisibleMetadata<T extends { metadata: Readonly<Record<string, string>> }>(view: T): T {
  return { ...view, metadata: visibleMetadata(view.metadata) };
}
