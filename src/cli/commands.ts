import os from 'node:os';
import { z } from 'zod';
import { secretSchema } from '../config.js';
import type { Db } from '../db/connection.js';
import type { Deps } from '../deps.js';
import { KeyVault, KeyVaultError } from '../domains/key-vault.js';
import { reencryptKeys } from '../domains/stored-keys.js';
import { RecipientTokens } from '../mail/tokens.js';
import { createApiKey, listApiKeys, revokeApiKey } from '../services/api-keys.js';
import { createTeam, setTeamRateLimit } from '../services/teams.js';
import { ROLES, type Actor, type Caller, type Role } from '../people/caller.js';
import { changeUserRole, inviteUser, listUsers, removeUser, resetTwoFactor } from '../people/team.js';
import { issuesToDetails } from '../validation.js';
import { splitArgs } from './args.js';
import { CliError, usageError } from './failure.js';

/**
 * Where a command runs: on a database the CLI opened itself, or in a server, for the CLI (the
 * control socket), whose keys read lately (`recentKeys`) forget a key the command revokes or changes.
 */
export type CommandTarget = { db: Db; publicUrl: string; /** The secret in force: SECRET, or DATA_DIR/secret. */ secret(): Promise<string> } & (
  | { runner: 'cli' }
  | { runner: 'server'; recentKeys: Deps['recentKeys'] }
);

/** A command whose arguments are checked, ready to run. */
export type ParsedCommand = { name: string; run(target: CommandTarget): Promise<unknown> };

type CommandSpec<Flags extends z.ZodObject> = {
  name: string;
  usage: string;
  summary: string;
  flags: Flags;
  run(target: CommandTarget, flags: z.output<Flags>): Promise<unknown>;
};

type Command = {
  name: string;
  usage: string;
  summary: string;
  flagNames: string[];
  bind(values: Record<string, string>): ParsedCommand;
};

/** Keeps each command's flag types private to it; the table holds commands of one shape. */
function command<Flags extends z.ZodObject>(spec: CommandSpec<Flags>): Command {
  return {
    name: spec.name,
    usage: spec.usage,
    summary: spec.summary,
    flagNames: Object.keys(spec.flags.shape),
    bind(values) {
      const parsed = spec.flags.safeParse(values);
      if (!parsed.success) {
        const problems = issuesToDetails(parsed.error.issues).map((detail) => `--${detail.path} ${detail.message}`);
        throw usageError(`${problems.join('; ')}; usage: ${spec.name} ${spec.usage}`);
      }
      return { name: spec.name, run: (target) => spec.run(target, parsed.data) };
    },
  };
}

/**
 * The operator, as the audit log names each change a command makes: the CLI, with the system user
 * that ran it when the system knows one (a command handed to the server runs as the server's user,
 * the only one its socket answers).
 */
export function cliActor(): Actor {
  let username = '';
  try {
    username = os.userInfo().username;
  } catch {
    // A user id without an entry in the user database: the CLI is named alone.
  }
  return { type: 'cli', id: 'cli', label: username ? `cli (${username})` : 'cli', ip: null };
}

// Ids and limits arrive as text; only plain decimal integers are accepted ("1e3", "0x10", " 7"
// are refused rather than guessed at). Team and domain ids are PostgreSQL integers.
const positiveInt = (max: number) =>
  z.string().regex(/^[1-9]\d*$/, 'must be a positive integer').transform(Number).pipe(z.number().max(max));
const id = positiveInt(2_147_483_647);
const label = z.string().trim().min(1).max(200);
const userId = z.string().trim().min(1).max(200);
const role = z.enum(ROLES as [Role, ...Role[]]);

/** The operator acting on the people of a team: no role (the CLI may do what an owner may), named in the audit log. */
const operator = (teamId: number): Caller => ({ teamId, domainId: null, actor: cliActor() });

const commands = [
  command({
    name: 'team create',
    usage: '--name NAME',
    summary: 'Create a team and its first API key (full permission).',
    flags: z.object({ name: label }),
    run: ({ db }, flags) => createTeam({ db }, flags, cliActor()),
  }),
  command({
    name: 'team set-rate-limit',
    usage: '--team TEAM_ID --per-second N|default',
    summary: `Set the team's API rate limit in requests per second; "default" returns it to RATE_LIMIT_PER_SECOND.`,
    flags: z.object({
      team: id,
      'per-second': z
        .string()
        .regex(/^(default|[1-9]\d*)$/, 'must be a positive integer or "default"')
        .transform((value) => (value === 'default' ? null : Number(value)))
        .pipe(z.number().max(1_000_000).nullable()),
    }),
    run: (target, flags) => setTeamRateLimit(target, { teamId: flags.team, perSecond: flags['per-second'] }, cliActor()),
  }),
  command({
    name: 'key create',
    usage: '--team TEAM_ID [--permission full|sending] [--domain DOMAIN_ID] [--name NAME]',
    summary: 'Create an API key; the token is shown only in this output. --domain limits it to one domain.',
    flags: z.object({
      team: id,
      permission: z.enum(['full', 'sending']).default('full'),
      domain: id.optional(),
      name: label.optional(),
    }),
    run: async ({ db }, flags) => {
      const key = await createApiKey({ db }, {
        teamId: flags.team,
        permission: flags.permission,
        domainId: flags.domain ?? null,
        name: flags.name ?? null,
      }, cliActor());
      return { id: key.id, teamId: flags.team, name: flags.name ?? null, permission: key.permission, domainId: key.domainId, apiKey: key.apiKey };
    },
  }),
  command({
    name: 'key list',
    usage: '--team TEAM_ID',
    summary: "List a team's API keys, revoked ones included (never the tokens: a hint of each).",
    flags: z.object({ team: id }),
    run: ({ db }, flags) => listApiKeys({ db }, { teamId: flags.team }),
  }),
  command({
    name: 'key revoke',
    usage: '--id KEY_ID',
    summary: 'Revoke an API key at once; revoking it again changes nothing.',
    flags: z.object({ id: z.string().trim().min(1).max(200) }),
    run: (target, flags) => revokeApiKey(target, flags, cliActor()),
  }),
  command({
    name: 'user invite',
    usage: '--team TEAM_ID --email ADDRESS [--role owner|admin|member|viewer]',
    summary:
      "Invite a person to the dashboard: the link (good once, for 7 days) lets them choose a password; hand it on to them. Inviting again sends a fresh link (with --role, a new role). --role: owner for the team's first person, member after, unless given.",
    flags: z.object({ team: id, email: z.string().max(254), role: role.optional() }),
    run: async ({ db, publicUrl, secret }, flags) =>
      inviteUser({ db, publicUrl, tokens: new RecipientTokens(await secret()) }, operator(flags.team), { email: flags.email, role: flags.role }),
  }),
  command({
    name: 'user list',
    usage: '--team TEAM_ID',
    summary: "List a team's dashboard users with their role: active, or invited and yet to choose a password.",
    flags: z.object({ team: id }),
    run: ({ db }, flags) => listUsers({ db }, operator(flags.team)),
  }),
  command({
    name: 'user set-role',
    usage: '--team TEAM_ID --user USER_ID --role owner|admin|member|viewer',
    summary: "Change a dashboard user's role; moved down, their sessions end at once. The team's last owner keeps the role.",
    flags: z.object({ team: id, user: userId, role }),
    run: ({ db }, flags) => changeUserRole({ db }, operator(flags.team), { userId: flags.user, role: flags.role }),
  }),
  command({
    name: 'user reset-two-factor',
    usage: '--team TEAM_ID --user USER_ID',
    summary: 'Turn off the two-factor sign-in of a dashboard user who lost their authenticator and recovery codes; their sessions end, and they sign in with their password.',
    flags: z.object({ team: id, user: userId }),
    run: ({ db }, flags) => resetTwoFactor({ db }, operator(flags.team), { userId: flags.user }),
  }),
  command({
    name: 'user remove',
    usage: '--team TEAM_ID --user USER_ID',
    summary: "Remove a dashboard user; their sessions end at once. The team's last owner cannot be removed.",
    flags: z.object({ team: id, user: userId }),
    run: ({ db }, flags) => removeUser({ db }, operator(flags.team), { userId: flags.user }),
  }),
  command({
    name: 'secret rotate',
    usage: '--new-secret NEW_SECRET',
    summary: 'Re-encrypt every DKIM private key and webhook signing secret from the current secret to NEW_SECRET, all or none (see "Rotating the secret").',
    flags: z.object({ 'new-secret': secretSchema }),
    run: (target, flags) => rotateSecret(target, flags['new-secret']),
  }),
];

const LINKS_WARNING =
  'The secret also signs the links in mail: unsubscribe, confirmation and tracking links sent before the rotation no longer work.';

async function rotateSecret(target: CommandTarget, newSecret: string) {
  if (target.runner === 'server') {
    throw new CliError(
      'SERVER_RUNNING',
      'secret rotate cannot run while a server uses this database: the server would keep the old secret. ' +
        'Stop it, run secret rotate, then start it with SECRET set to the new secret.',
    );
  }
  let reencrypted: Awaited<ReturnType<typeof reencryptKeys>>;
  try {
    reencrypted = await reencryptKeys(target.db, new KeyVault(await target.secret()), new KeyVault(newSecret));
  } catch (error) {
    if (!(error instanceof KeyVaultError)) throw error;
    throw new CliError('WRONG_SECRET', `${error.message}. No key or secret was changed.`);
  }
  return {
    reencrypted: reencrypted.keys,
    reencryptedWebhookSecrets: reencrypted.webhookSecrets,
    reencryptedTwoFactorSecrets: reencrypted.twoFactorSecrets,
    next: 'Start every Mailroom process with SECRET set to the new secret; with the old one, mail of these domains is not sent.',
    links: LINKS_WARNING,
  };
}

export const isHelpRequest = (argv: readonly string[]) =>
  argv[0] === 'help' || argv.some((arg) => arg === '--help' || arg === '-h');

/** Checks the words and flags against the command table; every mistake names the flag at fault. */
export function parseCommand(argv: readonly string[]): ParsedCommand {
  const { words, flags } = splitArgs(argv);
  const name = words.join(' ');
  if (!name) throw usageError('Missing command; run with --help to see the commands');
  const found = commands.find((candidate) => candidate.name === name);
  if (!found) throw usageError(`Unknown command "${name}"; the commands are: ${commands.map((c) => c.name).join(', ')}`);

  const unknown = [...flags.keys()].find((flag) => !found.flagNames.includes(flag));
  if (unknown) throw usageError(`Unknown flag --${unknown} for "${name}"; usage: ${name} ${found.usage}`);
  return found.bind(Object.fromEntries(flags));
}

export function helpText(): string {
  const list = commands.map((c) => `  ${c.name} ${c.usage}\n      ${c.summary}`).join('\n');
  return `Mailroom operators' CLI: teams, API keys, dashboard users, rate limits and the secret.

Usage: npm run --silent cli -- <command> [flags]

Commands:
${list}
  help
      Show this text (also --help, -h).

Flags are given as --flag VALUE or --flag=VALUE.

Output: on success, one JSON document on stdout and exit status 0. On failure, nothing on
stdout; the last line on stderr is a JSON object { "error": "...", "code": "..." } and the exit
status is 2 for a usage or configuration error (codes USAGE_ERROR, CONFIG_ERROR), 1 otherwise
(e.g. NOT_FOUND, DATA_DIR_LOCKED, INTERNAL_ERROR). Logs go to stderr as JSON lines (LOG_LEVEL).

Database: the CLI reads the server's environment. With DATABASE_URL it connects to PostgreSQL.
Without it, it uses the embedded database in DATA_DIR: while a server runs on that directory the
command is handed to the server over the Unix socket DATA_DIR/mailroom.sock (usable only by the
owner of the server process); otherwise the CLI opens the directory itself.

Rotating the secret: SECRET (or DATA_DIR/secret) encrypts the DKIM private keys in the database.
Stop every Mailroom process (secret rotate refuses to run through a server), run
  SECRET=<current secret> npm run --silent cli -- secret rotate --new-secret <new secret>
then start every process with SECRET set to the new secret. ${LINKS_WARNING}
`;
}
