import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * JSON log lines on stdout: `level` (a name), `time` (ISO 8601), `service`, the fields, `msg`. Nothing here ever logs headers or bodies; the redaction list is a second
 * line of defence in case a future call passes a request-shaped object by mistake.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'tokenproxy' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // `"level":"warn"` rather than pino's 40: readable by people and log shippers without a table.
      formatters: { level: (label) => ({ level: label }) },
      redact: {
        paths: [
          'headers',
          'req.headers',
          'res.headers',
          'body',
          'req.body',
          'authorization',
          '*.authorization',
          'real_key',
          '*.real_key',
          'apiKey',
          '*.apiKey',
        ],
        censor: '[REDACTED]',
      },
    },
    destination,
  );
}
