import { chmod, lstat, mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.js';

// Permission bits of group and others: none of them on anything under DATA_DIR.
const OTHERS = 0o077;
// A warning names this many of the paths it changed, and counts the rest.
const NAMED_IN_LOG = 20;

/**
 * Makes DATA_DIR private to the user running Mailroom before anything there is read or written:
 * what this process creates from now on gets no permission for group or others (the process
 * umask), and what an earlier version or an operator left open to them is closed, with one
 * warning naming it.
 */
export async function makeDataDirPrivate(dataDir: string, log: Logger): Promise<void> {
  process.umask(OTHERS);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const changed = await removeOthersAccess(dataDir);
  if (changed.length > 0) {
    log.warn('DATA_DIR was open to other users: made it private (directories 0700, files 0600)', {
      dataDir, changed: changed.length, paths: changed.slice(0, NAMED_IN_LOG),
    });
  }
}

/**
 * Takes every permission of group and others off a directory and everything under it, and
 * answers the paths it changed, relative to `root` (`.` for the root itself). The root may be a
 * symbolic link (a DATA_DIR on another volume); links under it are neither changed nor followed.
 * Entries that vanish meanwhile are skipped.
 */
export async function removeOthersAccess(root: string): Promise<string[]> {
  const changed: string[] = [];
  const visit = async (relative: string): Promise<void> => {
    const full = path.join(root, relative);
    try {
      const stats = await (relative ? lstat(full) : stat(full));
      if (stats.isSymbolicLink()) return;
      if ((stats.mode & OTHERS) !== 0) {
        await chmod(full, stats.mode & 0o700);
        changed.push(relative || '.');
      }
      if (stats.isDirectory()) await Promise.all((await readdir(full)).map((name) => visit(path.join(relative, name))));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  };
  await visit('');
  return changed.sort();
}
