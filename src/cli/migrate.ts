/**
 * `leasehold migrate <store-url> [--print]`: makes the storage a store would otherwise make itself
 * on first use (PostgreSQL's lease table), as a role that may run DDL, so the application's role
 * needs none (docs/postgres.md "Roles"). With `--print` it prints the SQL and connects to nothing:
 * for a DBA, or a migration tool of your own. The SQL is the backend's declaration's
 * (`Backend.migration`), the same the store runs, so the two never differ.
 */
import { LeaseValidationError } from "../errors.js";
import { backendOf, openStore, parseStoreUrl } from "../open-store.js";
import type { CliIo } from "./output.js";

export interface MigrateOptions {
  store: string;
  print: boolean;
}

/** A store that makes its storage on request: the PostgreSQL store's `migrate()`. */
interface Migrating {
  migrate(): Promise<"created" | "present">;
}

export async function migrateCommand(o: MigrateOptions, io: CliIo): Promise<number> {
  const spec = parseStoreUrl(o.store);
  const backend = backendOf(spec.kind);
  if (!backend.migration) {
    throw new LeaseValidationError("migrate", [
      {
        path: "store-url",
        message: `the ${spec.kind} store needs no migration (it makes what it needs itself, or its storage is made outside leasehold: see its docs page); migrate applies to postgres:// stores`,
      },
    ]);
  }
  const sql = backend.migration(spec);
  if (o.print) {
    io.out(sql);
    return 0;
  }
  const store = await openStore(o.store, { env: io.env });
  try {
    const outcome = await (store as unknown as Migrating).migrate();
    io.say(
      outcome === "created"
        ? "created the lease table and checked the server's settings"
        : "the lease table was already there: checked it and the server's settings",
    );
  } finally {
    await store.close?.();
  }
  return 0;
}
