import pino from 'pino'

export type Logger = pino.Logger

/** The one root logger; callers make children ({ requestId }, { accountId }, ...). */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    // Defence in depth: these never belong in a log line even if someone logs a request.
    redact: {
      paths: ['authorization', 'headers.authorization', '*.client_secret', '*.secret', '*.test_key', '*.live_key', 'req.headers.authorization'],
      censor: '[redacted]',
    },
  })
}
