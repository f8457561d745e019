/**
 * Bundles the console's browser client (console/) with esbuild into one module the server imports
 * as data on every runtime: build/console/assets.js, the script and the style sheet as strings with
 * their entity tags. The server imports it as `#console-assets` (package.json "imports"; its type is
 * console/assets.d.ts), so nothing generated lives in src/ and a fresh clone type-checks before this
 * runs. `npm run build`, the test setups, wrangler's build step and the Lambda bundle run it first,
 * so what Node, the Worker bundle and the package serve is always built from the sources beside it.
 * Writes only when the output changed. `tsx scripts/bundle-console.ts` runs it.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = join(import.meta.dirname, "..");
const client = join(root, "console");
export const BUNDLE = join(root, "build", "console", "assets.js");

async function bundle(entry: string, loader: "ts" | "css"): Promise<string> {
  const result = await build({
    entryPoints: [join(client, entry)],
    bundle: true,
    minify: true,
    write: false,
    ...(loader === "ts" ? { format: "esm" as const } : {}),
    platform: "browser",
    target: ["es2022", "chrome110", "firefox110", "safari16"],
    legalComments: "none",
    charset: "utf8",
    logLevel: "error",
  });
  const out = result.outputFiles?.[0];
  if (!out) throw new Error(`esbuild produced nothing for ${entry}`);
  return out.text;
}

const tag = (text: string) => `"${createHash("sha256").update(text).digest("base64url").slice(0, 22)}"`;

/** Builds the assets module; returns the sizes in bytes. */
export async function bundleConsole(): Promise<{ script: number; style: number; written: boolean }> {
  const [script, style] = await Promise.all([bundle("main.ts", "ts"), bundle("console.css", "css")]);
  const text = [
    "// Built by scripts/bundle-console.ts from console/: do not edit (typed by console/assets.d.ts).",
    `export const script = ${JSON.stringify(script)};`,
    `export const style = ${JSON.stringify(style)};`,
    `export const scriptTag = ${JSON.stringify(tag(script))};`,
    `export const styleTag = ${JSON.stringify(tag(style))};`,
    "",
  ].join("\n");
  const before = await readFile(BUNDLE, "utf8").catch(() => "");
  const sizes = { script: Buffer.byteLength(script), style: Buffer.byteLength(style) };
  if (before === text) return { ...sizes, written: false };
  // Written whole, then renamed: a concurrent reader (another setup, a bundler) never sees half a file.
  await mkdir(dirname(BUNDLE), { recursive: true });
  const temporary = `${BUNDLE}.${process.pid}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, BUNDLE);
  return { ...sizes, written: true };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { script, style, written } = await bundleConsole();
  console.error(
    `console assets: script ${(script / 1024).toFixed(1)} KiB, style ${(style / 1024).toFixed(1)} KiB${written ? "" : " (unchanged)"}`,
  );
}
