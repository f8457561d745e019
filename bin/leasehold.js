#!/usr/bin/env node
// The `leasehold` command. An installed package runs the compiled CLI (dist/cli/main.js); a source
// checkout has no dist/, so it registers tsx (a dev dependency) and runs the TypeScript directly.
import { existsSync } from "node:fs";

const compiled = new URL("../dist/cli/main.js", import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import(new URL("../src/cli/main.ts", import.meta.url).href);
}
