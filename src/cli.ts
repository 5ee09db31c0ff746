import { loadConfig } from './config.js';
import { helpText, isHelpRequest, parseCommand } from './cli/commands.js';
import { describeFailure, exitCodeFor } from './cli/failure.js';
import { createLogger } from './log.js';

const argv = process.argv.slice(2);

if (isHelpRequest(argv)) {
  finish(0, process.stdout, helpText());
} else {
  try {
    // Arguments are checked before the environment or the database is touched.
    const command = parseCommand(argv);
    const config = loadConfig();
    // Loaded only now: it brings in the server and database code, which help and usage errors skip.
    const { dispatch } = await import('./cli/dispatch.js');
    const result = await dispatch(config, argv, command, createLogger(config.logLevel));
    finish(0, process.stdout, `${JSON.stringify(result, null, 2)}\n`);
  } catch (error) {
    const failure = describeFailure(error);
    finish(exitCodeFor(failure.code), process.stderr, `${JSON.stringify(failure)}\n`);
  }
}

/** Exits once the output is flushed: pipes are asynchronous on some platforms. */
function finish(code: number, stream: NodeJS.WriteStream, text: string): void {
  stream.write(text, () => process.exit(code));
}
