/**
 * Backend SDKs are optional peer dependencies: a user loads only the one they use. A missing
 * one fails with the command that installs it instead of a bare "module not found".
 */
import { StoreUnavailableError } from "./errors.js";

export async function importPeer<T>(specifier: string, install: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
      throw new StoreUnavailableError(
        `this leasehold store needs the package "${specifier}": run \`npm install ${install}\``,
        {
          cause: error,
        },
      );
    }
    throw error;
  }
}
