import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { InferenceEventName, InferenceEvents } from '@svc/contracts';

/** One Server-Sent Events frame: `event: <type>` and one `data: <json>` line (JSON has no raw newlines). */
export const frame = <K extends InferenceEventName>(event: K, data: InferenceEvents[K]): string =>
  `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * Sends `frames` as a text/event-stream response. The body is pulled: a frame is
 * produced only when the socket takes the previous ones, and a client that goes
 * away destroys the stream, which ends the generator (its `finally` aborts the
 * model and records what was produced).
 */
export function sendEventStream(reply: FastifyReply, frames: AsyncGenerator<string>): FastifyReply {
  reply
    .type('text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache, no-transform')
    .header('x-accel-buffering', 'no');
  return reply.send(Readable.from(frames, { objectMode: false, highWaterMark: 1024 }));
}
