import { pino, type DestinationStream, type Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The process's one logger: a JSON line per message on stdout (pino), with the role and pid on every line. The HTTP
 * edge logs through a child per request (its `requestId`); every other message of the process goes through `info`.
 * Credentials never reach it: request lines carry the route and path, never headers, bodies or query strings, and
 * the fields that could hold a secret are censored wherever a caller passes them.
 */
export function createLogger(level: LogLevel, role: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { role, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          'authorization',
          '*.authorization',
          'headers.authorization',
          '*.headers.authorization',
          'token',
          '*.token',
          'secret',
          '*.secret',
          'apiKey',
          '*.apiKey',
          'password',
          '*.password',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

/** The `log(message)` function the service's modules take, writing through `logger`. */
export const logFunction = (logger: Logger) => (message: string) => logger.info(message);
