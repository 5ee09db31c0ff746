import { readFileSync } from 'node:fs';
import { link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

export type DataDirLock = { release(): Promise<void> };

export class DataDirLockedError extends Error {
  constructor(
    dataDir: string,
    readonly pid: number,
    lockFile: string,
  ) {
    super(
      `Data directory ${dataDir} is in use by another Mailroom process (pid ${pid}). ` +
        `Stop that process or set DATA_DIR to another directory; if pid ${pid} is not Mailroom, delete ${lockFile}.`,
    );
    this.name = 'DataDirLockedError';
  }
}

const lockFilePath = (dataDir: string) => path.join(dataDir, 'mailroom.lock');

// Locks this process holds, so a lock file naming our own pid is told apart from one left by an
// earlier process that had the same pid (a restarted container is pid 1 every time).
const heldHere = new Set<string>();

/**
 * Takes the exclusive lock on an embedded data directory (PGlite allows one process per
 * directory), creating the directory if missing. A lock whose process is gone is taken over.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = lockFilePath(dataDir);
  // Each pass either takes the lock, reports its live holder, or removes a dead holder's file;
  // only a crowd of processes racing over one stale lock needs more than two.
  for (let attempt = 0; attempt < 10; attempt++) {
    if (await tryCreate(file)) {
      heldHere.add(file);
      return { release: () => release(file) };
    }
    const holder = await readPid(file);
    if (holder === undefined) continue;
    if (isLive(file, holder)) throw new DataDirLockedError(dataDir, holder, file);
    await removeIfStill(file, holder);
  }
  throw new Error(`Could not take the lock ${file}: other processes keep replacing it`);
}

/** Writes the pid to a private file first and links it into place, so the lock never exists empty. */
async function tryCreate(file: string): Promise<boolean> {
  const draft = `${file}.${process.pid}.new`;
  await writeFile(draft, `${process.pid}\n`, { mode: 0o600 });
  try {
    await link(draft, file);
    return true;
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(draft);
  }
}

/**
 * Moves the stale file aside atomically before deleting it: a process that took the lock between
 * our read and our move has its fresh file moved instead, and gets it back unchanged.
 */
async function removeIfStill(file: string, stalePid: number) {
  const aside = `${file}.${process.pid}.stale`;
  try {
    await rename(file, aside);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  if ((await readPid(aside)) !== stalePid) {
    await link(aside, file).catch((error) => {
      if (errorCode(error) !== 'EEXIST') throw error;
    });
  }
  await unlink(aside);
}

async function release(file: string) {
  if (!heldHere.delete(file)) return;
  if ((await readPid(file)) === process.pid) await unlink(file).catch(() => {});
}

async function readPid(file: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  const pid = Number(text.trim());
  // Unreadable content is treated like a dead holder: no live process can be named by it.
  return Number.isSafeInteger(pid) && pid > 0 ? pid : 0;
}

function isLive(file: string, pid: number): boolean {
  if (pid === 0) return false;
  if (pid === process.pid) return heldHere.has(file);
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return errorCode(error) === 'EPERM';
  }
  return !isZombie(pid);
}

/**
 * A killed process answers signals until its parent reaps it, which can take a while when the
 * parent died with it and init reaps lazily. Linux shows the state in /proc; elsewhere a zombie
 * counts as live until reaped.
 */
function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // The state follows the command name, which is in parentheses and may itself contain them.
  return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;
