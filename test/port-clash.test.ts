import net, { type AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { childEnv, cleanUpAfterEach, errorsLogged, failedServerStart, seededDataDir } from './helpers/processes.js';

const cleanups = cleanUpAfterEach();

/** A loopback port held by this test for as long as it runs. */
async function heldPort(): Promise<number> {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
  cleanups.push(() => new Promise((resolve) => holder.close(resolve)));
  return (holder.address() as AddressInfo).port;
}

describe('a port another process holds', () => {
  it('stops the start with exit code 1 and one error line naming PORT and the address, as the SMTP listeners name theirs', async () => {
    const port = await heldPort();
    const dataDir = await seededDataDir();
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));

    const refused = await failedServerStart(childEnv({ DATA_DIR: dataDir, PORT: String(port) }));
    expect(refused.code).toBe(1);
    const errors = errorsLogged(refused.stderr);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toBe(`The HTTP server could not start on 127.0.0.1:${port} (PORT): listen EADDRINUSE: address already in use 127.0.0.1:${port}`);
  });
});
