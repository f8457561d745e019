/**
 * Installing a test tool into its own folder under `.cache/`: built in a private folder beside it
 * and renamed into place, so two runs installing at once never see half a tool (the second run's
 * rename fails, and the first one's folder is as good as its own).
 */
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";

/** Runs `build(staging)` and moves the staging folder to `dir`, unless `dir` exists already. */
export async function installFolder(dir: string, build: (staging: string) => Promise<void>): Promise<void> {
  if (existsSync(dir)) return;
  mkdirSync(join(dir, ".."), { recursive: true });
  const staging = mkdtempSync(join(dir, "../.install-"));
  try {
    await build(staging);
    try {
      renameSync(staging, dir);
    } catch (error) {
      // Another run installed it first: theirs is as good as ours.
      if (!existsSync(dir)) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
