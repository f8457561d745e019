/** Types for dynalite 4 (it ships none): the factory returns a plain Node HTTP server. */
declare module "dynalite" {
  import type { Server } from "node:http";

  interface DynaliteOptions {
    /** Folder for LevelDB files; in memory when absent. */
    path?: string;
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
    ssl?: boolean;
    verbose?: boolean;
  }

  export default function dynalite(options?: DynaliteOptions): Server;
}
