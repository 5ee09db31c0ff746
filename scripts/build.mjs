/**
 * Builds dist/ (`npm run build`; `npm ci` and `npm install` run it as prepare). `npm start` and
 * `npm run cli` preload fresh-dist.mjs, which builds again only what is older than its inputs. Plain
 * JavaScript, since it runs before anything is compiled.
 *
 * dist/main.js and dist/cli.js are bundles of src/ and the packages it uses, made by esbuild: a
 * process loads a few files instead of about a thousand modules, which was most of what a start
 * cost. Left out: the embedded database (it loads its WebAssembly beside its module), selfsigned
 * (loaded only to make the first self-signed certificate), pg-native (an optional part of pg that
 * Mailroom does not use). A file that a module reads at run time, named relative to the module
 * (`new URL('./migrations/', import.meta.url)`), is read beside the module's source in src/.
 *
 * dist/pgdata/ is an empty cluster of the embedded database, which a first start copies
 * (src/db/pglite-cluster.ts) instead of running PGlite's initdb: 5 to 20 seconds on two busy
 * cores. It depends only on the installed PGlite, so it is made again only when package-lock.json
 * changes.
 */
import { mkdir, readdir, readFile, rename, rm, stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = path.join(root, 'src');
const DIST = path.join(root, 'dist');
const ENTRIES = ['main.js', 'cli.js'];
const CLUSTER = 'pgdata';
const EXTERNAL = ['@electric-sql/pglite', 'selfsigned', 'pg-native'];
// What every part of dist/ is made from, besides src/ for the bundles.
const TOOLING = ['package-lock.json', 'scripts/build.mjs'].map((file) => path.join(root, file));

/**
 * Gives each module of the project's own that is not an entry its source's URL as import.meta.url
 * (in the bundle it would be the bundle's): a file it reads at run time (`new URL('./migrations/',
 * import.meta.url)`) is read beside its source, and a script's own "am I the program" check
 * (`import.meta.url === argv[1]`) holds only in the entry that node runs.
 */
const sourceUrls = (outdir, sources) => ({
  name: 'source-urls',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`) || sources.includes(args.path)) return undefined;
      const source = path.relative(outdir, args.path).split(path.sep).join('/');
      const text = (await readFile(args.path, 'utf8')).replaceAll('import.meta.url', `new URL(${JSON.stringify(source)}, import.meta.url).href`);
      return { contents: text, loader: 'ts' };
    });
  },
});

/**
 * Bundles `sources` (src/main.ts and src/cli.ts unless told) into a directory of its own, then moves
 * each file into `outdir`, the entries last, and removes the chunks an earlier build left: a process
 * starting meanwhile, or a second build at the same time (four `npm start` of a Procfile), never
 * sees an entry without its chunks.
 */
async function bundle(outdir, sources = ENTRIES.map((entry) => path.join(src, entry.replace(/\.js$/, '.ts')))) {
  const entries = sources.map((source) => path.basename(source).replace(/\.ts$/, '.js'));
  const started = new Date();
  const staging = `${outdir}.${process.pid}.tmp`;
  const esbuild = await import('esbuild');
  try {
    const result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: sources,
      outdir: staging,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      external: EXTERNAL,
      // The CommonJS packages in the bundle call require().
      banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
      plugins: [sourceUrls(outdir, sources)],
      logLevel: 'warning',
      metafile: true,
    });
    await mkdir(outdir, { recursive: true });
    const built = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
    // Dated when the build began: a source saved while it ran is newer, and builds again.
    for (const entry of entries) await utimes(path.join(staging, entry), started, started);
    for (const file of [...built.filter((name) => !entries.includes(name)), ...entries]) {
      await rename(path.join(staging, file), path.join(outdir, file));
    }
    for (const file of await readdir(outdir)) {
      if (file.endsWith('.js') && !built.includes(file)) await rm(path.join(outdir, file), { force: true });
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
    await esbuild.stop();
  }
}

async function makeCluster(outdir) {
  const { PGlite } = await import('@electric-sql/pglite');
  const staging = path.join(outdir, `${CLUSTER}.${process.pid}.tmp`);
  await mkdir(outdir, { recursive: true });
  try {
    await (await PGlite.create(staging)).close();
    await rm(path.join(outdir, CLUSTER), { recursive: true, force: true });
    await rename(staging, path.join(outdir, CLUSTER));
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** The newest modification under `dir`, directories included (a removed file changes its directory's). */
async function newest(dir) {
  let latest = (await stat(dir)).mtimeMs;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? await newest(full) : (await stat(full)).mtimeMs);
  }
  return latest;
}

/** Whether the files are all there and newer than every input. */
async function upToDate(files, inputs) {
  try {
    const made = await Promise.all(files.map(async (file) => (await stat(file)).mtimeMs));
    return Math.max(...inputs) <= Math.min(...made);
  } catch {
    return false;
  }
}

const tooling = () => Promise.all(TOOLING.map(async (file) => (await stat(file)).mtimeMs));

/**
 * Makes what is missing or out of date in `outdir`, or all of it with `force` (the bundles; the
 * cluster only when out of date, as it takes seconds). `say` is told what is about to be made.
 */
export async function build({ outdir = DIST, force = false, say = () => {} } = {}) {
  const tools = await tooling();
  if (force || !(await upToDate(ENTRIES.map((entry) => path.join(outdir, entry)), [await newest(src), ...tools]))) {
    say('building dist/ from src/ (npm run build)');
    await bundle(outdir);
  }
  if (!(await upToDate([path.join(outdir, CLUSTER, 'PG_VERSION')], tools))) {
    say('preparing the empty embedded database that first starts copy (once per install, up to 20 s)');
    await makeCluster(outdir);
  }
}

/**
 * `node scripts/build.mjs [--outdir DIR] [SCRIPT.ts…]`: dist/ in full, or into DIR; with scripts
 * named, only their bundles (the benchmarks run theirs, so that a figure of memory or CPU is the
 * service's as `npm start` runs it, without a TypeScript loader's share). The outdir must lie
 * inside the project, where the bundles find the installed packages.
 */
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--outdir');
  const outdir = at === -1 ? DIST : path.resolve(args.splice(at, 2)[1]);
  if (args.length > 0) await bundle(outdir, args.map((script) => path.resolve(script)));
  else await build({ outdir, force: true });
}
