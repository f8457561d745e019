import type { IncomingMessage, ServerResponse } from "node:http";
import { Hono } from "hono";
import { fencedFetch, type HttpFenceOptions, honoFence, nodeFence } from "leasehold/fencing/http";

type Save = (id: string, body: string) => Promise<void>;

// The service, with Hono (options: a shared TermFence or TermStore, a fixed lease): every write to /reports/* carries the writer's lease and term
// (Leasehold-Lease, Leasehold-Term). The fence keeps the highest term per lease, answers 409
// problem+json to an older one before the route runs, and runs a newer term's request only once
// the older ones it admitted have finished.
export function reportsApp(save: Save, options: HttpFenceOptions = {}): Hono {
  const app = new Hono();
  app.use("/reports/*", honoFence(options));
  app.put("/reports/:id", async (c) => {
    await save(c.req.param("id"), await c.req.text());
    return c.body(null, 204);
  });
  return app;
}

// The same in node:http (in Express: app.use("/reports", nodeFence())). A request counts as
// running until its response closes.
export function reportsHandler(save: Save, options: HttpFenceOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const fence = nodeFence(options);
  return (req, res) =>
    fence(req, res, async () => {
      try {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        await save(decodeURIComponent((req.url ?? "").replace(/^\/reports\//, "")), Buffer.concat(chunks).toString());
        res.writeHead(204).end();
      } catch {
        res.writeHead(500).end();
      }
    });
}

// The leader: its lease and term go with every write. A refusal by the fence (409) throws
// StaleTermError: a newer leader exists, so stop acting as leader and never retry with this term.
export async function saveReport(baseUrl: string, id: string, body: string, lease: string, term: number) {
  const response = await fencedFetch(`${baseUrl}/reports/${id}`, { method: "PUT", body }, { lease, term });
  if (!response.ok) throw new Error(`PUT /reports/${id}: HTTP ${response.status}`);
}
