/**
 * Vitest global setup (both configs): builds the console's assets module (build/console/assets.js)
 * before any test imports the app, so a test run on a fresh clone needs no build first
 * (scripts/bundle-console.ts).
 */
import { bundleConsole } from "../../scripts/bundle-console.js";

export default async function setup(): Promise<void> {
  await bundleConsole();
}
