/**
 * The memory backend's declaration (../backend.ts): `memory:`, a store in this process only (for
 * tests and a single process), so it is refused wherever two instances could each keep their own.
 * Runtime-neutral.
 */
import { z } from "zod";
import type { Backend } from "../backend.js";
import * as parts from "../url.js";
import { MemoryStore } from "./store.js";

export interface MemoryUrl {
  kind: "memory";
}

const PER_INSTANCE = "would keep its own leases, so two of them could elect two leaders";

export const memoryBackend: Backend<MemoryUrl> = {
  kind: "memory",
  schemes: ["memory"],
  forms: ["memory:"],
  options: z.strictObject({}),
  runtimes: { node: true, lambda: `each Lambda instance ${PER_INSTANCE}`, workers: `each isolate ${PER_INSTANCE}` },
  parse(text) {
    const rest = text.slice("memory:".length);
    if (rest !== "" && rest !== "//") throw parts.invalid("memory: URL", `expected nothing after "memory:"`);
    return { kind: "memory" };
  },
  open() {
    return new MemoryStore();
  },
};
