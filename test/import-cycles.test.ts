/**
 * docs/design.md §6: the import graph of src/ has no circle. A circle, even a type-only one, means
 * two modules cannot be read (or changed) one without the other; a runtime one can also leave a
 * binding undefined at load time depending on which module a caller imports first.
 * Every relative import of src/**\/*.ts counts: `import`, `import type`, `export ... from`, and
 * `import()`; TypeScript's own scanner finds them (comments and strings are not imports).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const src = join(root, "src");

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? files(join(dir, d.name)) : /\.ts$/.test(d.name) ? [join(dir, d.name)] : [],
  );
}

/** The src/ modules `file` imports (relative specifiers, `.js` written for the `.ts` source). */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  const out: string[] = [];
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith(".")) continue;
    const target = resolve(dirname(file), fileName);
    const candidates = [target.replace(/\.js$/, ".ts"), target, `${target}.ts`, join(target, "index.ts")];
    const found = candidates.find((c) => c.endsWith(".ts") && existsSync(c));
    if (found) out.push(found);
  }
  return out;
}

/** Tarjan's strongly connected components; every component of more than one module (or a self-import) is a circle. */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)?.includes(v)) out.push(component);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** One concrete circle inside a component, as `a → b → … → a` (a shortest one from its first module). */
function oneCircle(graph: Map<string, string[]>, component: string[]): string[] {
  const inside = new Set(component);
  const start = [...component].sort()[0]!;
  const from = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(from.get(path[0]!)!);
        return [...path, start];
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return component;
}

it("the import graph of src/ has no circle (type-only imports included)", () => {
  const graph = new Map(files(src).map((f) => [f, importsOf(f)]));
  expect(graph.size).toBeGreaterThan(50);
  const name = (f: string) => relative(root, f).split("\\").join("/");
  const found = circles(graph).map((c) => oneCircle(graph, c).map(name).join(" → "));
  expect(found, `import circles in src/:\n${found.join("\n")}`).toEqual([]);
});
