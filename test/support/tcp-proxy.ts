/**
 * A TCP forwarder on 127.0.0.1 for a database's wire protocol, with one fault: `freeze()` stops
 * moving bytes either way while every connection stays open, as a network partition or a dead
 * peer behind a NAT looks to a client (no FIN, no RST, nothing); `thaw()` moves them again. New
 * connections are accepted while frozen and hang the same way.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

export interface TcpProxy {
  port: number;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(upstreamPort: number): Promise<TcpProxy> {
  let frozen = false;
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    const upstream = connect(upstreamPort, "127.0.0.1");
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    for (const [from, to] of [pair, [upstream, client] as const]) {
      from.on("data", (chunk) => {
        if (!frozen) to.write(chunk);
      });
      from.on("error", () => to.destroy());
      from.on("close", () => {
        to.destroy();
        pairs.delete(pair);
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
    },
    close: async () => {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
