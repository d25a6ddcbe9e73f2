// The inference streams (RAG, document ask, chat): Server-Sent Events as typed events.
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { Schemas, StreamEvent } from './api-types.js';
import { ApiError, type Fetched } from './errors.js';

/**
 * The frames of a Server-Sent Events answer as typed events. A refusal before the
 * stream (a JSON error answer) is thrown as an ApiError; a failure mid-stream is
 * the stream's own `error` event. Ending the loop early cancels the request.
 */
export async function* events<E extends StreamEvent>(call: Promise<Fetched<unknown>>): AsyncGenerator<E> {
  const { error, response } = await call;
  if (!response.ok) throw new ApiError(response.status, error, response.headers.get('x-request-id'));
  if (!response.body) return;
  const frames = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  const reader = frames.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      yield { event: value.event ?? 'message', data: JSON.parse(value.data) } as E;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** The answer text of a stream (its content_delta events) and its `done` event; an `error` event is thrown. */
export async function collectAnswer(
  stream: AsyncIterable<StreamEvent>,
): Promise<{ text: string; done: Schemas['DoneEvent']['data']; events: StreamEvent[] }> {
  let text = '';
  const all: StreamEvent[] = [];
  for await (const e of stream) {
    all.push(e);
    if (e.event === 'content_delta') text += e.data.delta;
    else if (e.event === 'error') throw new ApiError(502, { message: e.data.message, errorCode: e.data.code });
    else if (e.event === 'done') return { text, done: e.data, events: all };
  }
  throw new Error('the stream ended without a done event');
}
