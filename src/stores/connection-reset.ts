/**
 * A request whose connection broke before any answer came (no status; a reset or a closed
 * socket): most often a kept-alive socket the server had just closed, the race every HTTP client
 * with keep-alive meets. Stores send a *read* that failed this way once more, since a read changes
 * nothing; never a write (its outcome is unknown, and is resolved by the write path).
 */
export function isConnectionReset(error: unknown): boolean {
  const e = error as { code?: unknown; statusCode?: unknown; $metadata?: { httpStatusCode?: unknown } } | null;
  if (e === null || typeof e !== "object") return false;
  const answered = e.statusCode !== undefined || e.$metadata?.httpStatusCode !== undefined;
  return !answered && (e.code === "ECONNRESET" || e.code === "EPIPE");
}
