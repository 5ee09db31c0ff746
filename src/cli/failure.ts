import { ConfigError } from '../config.js';
import { ApiError } from '../errors.js';

/** What the CLI prints, and the control socket answers, when a command fails. */
export type Failure = { error: string; code: string };

/** A failure with a code of the CLI's own (usage, configuration, reaching the server). */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string) => new CliError('USAGE_ERROR', message);

export function describeFailure(error: unknown): Failure {
  if (error instanceof ApiError || error instanceof CliError) return { error: error.message, code: error.code };
  if (error instanceof ConfigError) return { error: error.message, code: 'CONFIG_ERROR' };
  return { error: messageOf(error), code: 'INTERNAL_ERROR' };
}

/** 2 for a mistake in how the CLI was called (arguments or environment), 1 for anything else. */
export const exitCodeFor = (code: string) => (code === 'USAGE_ERROR' || code === 'CONFIG_ERROR' ? 2 : 1);

// A refused connection to PostgreSQL arrives as an AggregateError with an empty message.
function messageOf(error: unknown): string {
  if (error instanceof AggregateError && !error.message) return error.errors.map(messageOf).join('; ');
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
