/**
 * Slow clients in their own process, for the connection tests and the bench (issue #30, item 5):
 *
 *   node --import tsx test/support/slow-clients.ts <port> <count> <from address> [everyMs]
 *
 * opens <count> connections to 127.0.0.1:<port> from <from address> (a second loopback address
 * such as 127.0.0.2, so a per-address bound meets them honestly). Each sends a request line and
 * then one header byte every `everyMs` (default 200) for ever, ignores whatever the server answers
 * (it never closes its side, even after the server's FIN), and connects again 100 ms after the
 * server closed it. Once a second, and at SIGTERM, it prints one JSON line: connections open now,
 * the most open at once, connects, closes by the server, and the answers it was sent by status
 * and `bound`.
 */
import { connect, type Socket } from "node:net";

const [portText, countText, from, everyText = "200"] = process.argv.slice(2);
const port = Number(portText);
const count = Number(countText);
const everyMs = Number(everyText);
if (!port || !count || !from) throw new Error("usage: slow-clients.ts <port> <count> <from address> [everyMs]");

const stats = { open: 0, mostOpen: 0, connects: 0, closed: 0, answers: {} as Record<string, number> };
let stopping = false;

function client(): void {
  if (stopping) return;
  const socket: Socket = connect({ port, host: "127.0.0.1", localAddress: from, allowHalfOpen: true });
  let received = "";
  let timer: NodeJS.Timeout | undefined;
  socket.on("connect", () => {
    stats.connects++;
    stats.open++;
    stats.mostOpen = Math.max(stats.mostOpen, stats.open);
    socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    timer = setInterval(() => {
      if (socket.writable) socket.write("x");
    }, everyMs);
  });
  socket.on("data", (chunk: Buffer) => {
    received += chunk.toString("latin1");
  });
  socket.on("error", () => undefined);
  socket.on("close", (hadError) => {
    clearInterval(timer);
    if (timer !== undefined) {
      stats.open--;
      stats.closed++;
    }
    const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? (hadError ? "reset" : "none");
    const bound = /"bound":"([A-Za-z]+)"/.exec(received)?.[1];
    const key = bound ? `${status} ${bound}` : status;
    stats.answers[key] = (stats.answers[key] ?? 0) + 1;
    setTimeout(client, 100);
  });
}

for (let i = 0; i < count; i++) client();
const report = () => process.stdout.write(`${JSON.stringify(stats)}\n`);
const every = setInterval(report, 1000);
process.once("SIGTERM", () => {
  stopping = true;
  clearInterval(every);
  report();
  process.exit(0);
});
