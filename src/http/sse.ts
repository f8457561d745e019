/**
 * Reads a Server-Sent Events body into messages, with eventsource-parser doing the parsing the
 * spec asks for (CRLF and CR line ends, multi-line data, `event:`, `id:`, comments, a message
 * split across chunks). Runtime-neutral: web streams only.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";

export type SseMessage = EventSourceMessage;

/** Yields each message of `body` in order; ends when the body ends. Cancels the body when the caller stops. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncIterable<SseMessage> {
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
      const { value, done } = await reader.read();
      if (done) return;
      parser.feed(value);
      while (queue.length > 0) yield queue.shift() as SseMessage;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
