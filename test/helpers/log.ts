import type { Logger } from '../../src/log.js';

export type LogEntry = { level: 'debug' | 'info' | 'warn' | 'error'; msg: string; fields: Record<string, unknown> };

/** A logger that keeps what it is told, so a test can check that something was logged. */
export function recordingLogger(): { log: Logger; entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: LogEntry['level']) => (msg: string, fields: Record<string, unknown> = {}) => void entries.push({ level, msg, fields });
  return { log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, entries };
}
