/**
 * Preloaded by `npm start` and `npm run cli` (`node --import`), before node loads dist/main.js or
 * dist/cli.js: builds what src/ or the installed packages changed since the last build, saying so
 * on stderr as a log line, so a source edited since `npm run build` is never run stale. In the
 * same process, which gets its signals itself; a check that finds nothing to do takes milliseconds.
 */
import { build } from './build.mjs';

await build({
  say: (msg) => process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg })}\n`),
});
