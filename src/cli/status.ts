/** `leasehold status [PREFIX]`: every lease under a prefix, as a table or JSON. */
import { validatePrefix } from "../lease.js";
import { openStore } from "../open-store.js";
import { type CliIo, describeExpiry, formatTable, type LeaseView, viewOf } from "./output.js";

export interface StatusOptions {
  store: string;
  prefix: string;
  json: boolean;
}

export async function statusCommand(o: StatusOptions, io: CliIo): Promise<number> {
  const prefix = validatePrefix(o.prefix);
  // Read-only: a store that does not exist yet is an error, never a new empty database.
  const store = await openStore(o.store, { env: io.env, create: false });
  try {
    if (!store.list) throw new Error(`the store ${o.store} cannot list leases`);
    const now = Date.now();
    const views: LeaseView[] = [];
    for await (const stored of store.list(prefix)) views.push(viewOf(stored, now));
    if (o.json) {
      io.out(JSON.stringify(views));
    } else if (views.length === 0) {
      io.say(prefix === "" ? "no leases" : `no leases under "${prefix}"`);
    } else {
      const rows = views.map((v) => [v.name, v.holder ?? "-", String(v.term), describeExpiry(v)]);
      for (const line of formatTable(["LEASE", "HOLDER", "TERM", "EXPIRES IN"], rows)) io.out(line);
    }
    return 0;
  } finally {
    await store.close?.();
  }
}
