/**
 * Copies the entries of `values` that are defined: how an options object leaves out what was not
 * given, where `exactOptionalPropertyTypes` tells "absent" from "undefined" (store URL specs, the
 * CLI's flags, `serve()`'s options). Runtime-neutral, no imports.
 */
export function defined<T extends Record<string, unknown>>(values: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as never;
}
