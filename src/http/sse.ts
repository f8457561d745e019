/**
 * Reads a Server-Sent Events body into messages, with eventsource-parser doing the parsing the
 * spec asks for (CRLF and CR line ends, multi-line data, `event:`, `id:`, comments, a message
 * split across chunks). Runtime-neutral: web streams only.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";

export type SseMessage = EventSourceMessage;

/** No byte (not even a keep-alive comment) for `idleMs`: the link is taken for dead (docs/partitions.md). */
export class SseIdleError extends Error {
  override name = "SseIdleError";
}

/**
 * Yields each message of `body` in order; ends when the body ends. Cancels the body when the
 * caller stops. With `idleMs`, a body that delivers nothing for that long (the server sends a
 * keep-alive comment every LEASEHOLD_HEARTBEAT_MS) throws `SseIdleError`: a stream on a dead link
 * would otherwise stay "open" forever, and its reader never hear of a release.
 */
export async function* readSse(body: ReadableStream<Uint8Array>, idleMs?: number): AsyncIterable<SseMessage> {
  const queue: SseMessage[] = [];
  const parser = createParser({ onEvent: (message) => queue.push(message) });
  // TextDecoderStream's writable side is typed for any BufferSource; bytes are what we feed it.
  // (Typed by its shape: this module compiles with Node's types and, in the console, with the DOM's.)
  const decoder = new TextDecoderStream() as unknown as {
    readable: ReadableStream<string>;
    writable: WritableStream<Uint8Array>;
  };
  const reader = body.pipeThrough(decoder).getReader();
  try {
    for (;;) {
      const { value, done } = await readWithin(reader, idleMs);
      if (done) return;
      parser.feed(value);
      while (queue.length > 0) yield queue.shift() as SseMessage;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

async function readWithin<T>(reader: ReadableStreamDefaultReader<T>, idleMs: number | undefined) {
  if (idleMs === undefined) return reader.read();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SseIdleError(`no data on the stream for ${idleMs} ms`)), idleMs);
  });
  try {
    return await Promise.race([reader.read(), idle]);
  } finally {
    clearTimeout(timer);
  }
}
