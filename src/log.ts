const levels = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof levels;
type Fields = Record<string, unknown>;

export type Logger = {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
};

/** One JSON line per entry on stderr, so logs stay machine-readable and stdout stays free for the CLI. */
export function createLogger(level: LogLevel): Logger {
  const threshold = levels[level];
  const write = (entryLevel: Exclude<LogLevel, 'silent'>) => (msg: string, fields?: Fields) => {
    if (levels[entryLevel] < threshold) return;
    const entry = { time: new Date().toISOString(), level: entryLevel, msg, ...fields };
    process.stderr.write(`${JSON.stringify(entry, errorReplacer)}\n`);
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}

function errorReplacer(_key: string, value: unknown) {
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}
