import { Worker } from 'node:worker_threads';
import { onTestFinished } from 'vitest';

/**
 * Calls a function a TypeScript module exports on a thread of its own and answers its (awaited)
 * result. A call that never ends then fails its test at the test timeout, where one on the test's
 * own thread would hold the runner for as long as it takes: how a test of a cost that must stay
 * linear fails when it grows quadratic, without asserting a duration.
 */
export function onAThread<T>(module: URL, name: string, ...args: unknown[]): Promise<T> {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     import('tsx/esm/api')
       .then(({ tsImport }) => tsImport(workerData.module, workerData.module))
       .then((loaded) => loaded[workerData.name](...workerData.args))
       .then((result) => parentPort.postMessage(result));`,
    { eval: true, workerData: { module: module.href, name, args } },
  );
  onTestFinished(() => void worker.terminate());
  return new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}
