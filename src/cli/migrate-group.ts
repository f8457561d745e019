/**
 * `leasehold migrate-group GROUP`: moves a sharded group made by leasehold 0.1.0 to the record
 * names this version uses, keeping every bucket's term (src/sharding/migrate.ts). Members of this
 * version refuse the old group, naming this command, until it has run.
 */
import { openStore } from "../open-store.js";
import { migrateGroup } from "../sharding/migrate.js";
import type { CliIo } from "./output.js";

export interface MigrateGroupCommandOptions {
  store: string;
  group: string;
  maxSkewMs: number;
  json: boolean;
}

export async function migrateGroupCommand(o: MigrateGroupCommandOptions, io: CliIo): Promise<number> {
  const store = await openStore(o.store, { env: io.env, create: false });
  try {
    const result = await migrateGroup({ store, group: o.group, maxSkewMs: o.maxSkewMs });
    if (o.json) io.out(JSON.stringify({ group: o.group, ...result }));
    else if (result.moved) {
      io.say(
        `moved group "${o.group}" (${result.config?.buckets} buckets): ${result.buckets} bucket records carried over at their terms`,
      );
    } else io.say(`group "${o.group}" has nothing to move (moved already, or no 0.1.0 records)`);
    return 0;
  } finally {
    await store.close?.();
  }
}
