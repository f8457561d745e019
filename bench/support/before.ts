/**
 * The sources of the code before a change, for benchmarks that measure before and after in one
 * run: `git archive <commit> src` unpacked under bench/.before/<commit>/ (git ignores it), with
 * this tree's generated console bundle beside them as the module the older code imports
 * (`src/api/console/assets.gen.ts`; generated, never committed; any will do for a server the
 * benchmark never asks for its page). Undefined when this clone lacks the commit.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";

/** The commit issue #30's reproductions ran against. */
export const ISSUE_30_COMMIT = "1f85336";

/** The `src` folder of `commit`, unpacked once. */
export function beforeSources(commit: string): string | undefined {
  const root = join(import.meta.dirname, "..", "..");
  const dir = join(root, "bench", ".before", commit);
  const src = join(dir, "src");
  if (!existsSync(join(src, "api", "app.ts"))) {
    try {
      mkdirSync(dir, { recursive: true });
      const archive = execFileSync("git", ["archive", commit, "src"], { cwd: root, maxBuffer: 1 << 28 });
      execFileSync("tar", ["-x", "-C", dir], { input: archive });
    } catch {
      return undefined;
    }
  }
  // This tree's bundle (build/console/assets.js, made by scripts/bundle-console.ts) has the names
  // the older code's src/api/console/assets.gen.ts had.
  copyFileSync(join(root, "build", "console", "assets.js"), join(src, "api", "console", "assets.gen.ts"));
  return src;
}
