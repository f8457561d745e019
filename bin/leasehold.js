#!/usr/bin/env node
// The `leasehold` command. A source checkout (src/ present) runs the TypeScript through tsx, a dev
// dependency, so a stale dist/ from an earlier build is never what runs; an installed package
// ships only dist/ and runs the compiled CLI.
import { existsSync } from "node:fs";

const source = new URL("../src/cli/main.ts", import.meta.url);
if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source.href);
} else {
  await import(new URL("../dist/cli/main.js", import.meta.url).href);
}
