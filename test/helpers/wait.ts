/** Reads until `done` holds, and answers what it read then; fails naming `what` and the last value after the timeout. */
export async function waitFor<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: never happened; last seen ${JSON.stringify(value)}`);
    await sleep(25);
  }
}

/** Lets `ms` pass: for a test that must see nothing happen meanwhile, or let a known period run out. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
