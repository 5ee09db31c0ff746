import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerWithDns, verifiedDomain } from './helpers/domains.js';
import { runShellBlocks, sectionBlocks } from './helpers/markdown-examples.js';
import { expectOk } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';
import { waitFor } from './helpers/wait.js';

/**
 * The curl examples of docs/automations.md's API section, run as written against a server whose
 * team has example.com verified (through a loopback DNS server) and sends to a loopback SMTP sink:
 * each block in turn, with the shell variables a reader would have set from the answers before.
 */

let env: Awaited<ReturnType<typeof startServerWithDns>>;
let sink: SmtpSink;

beforeAll(async () => {
  sink = await startSmtpSink();
  env = await startServerWithDns({ SMTP_URL: sink.url, DISPATCH_POLL_MS: '20', AUTOMATION_POLL_MS: '20' });
  env.dns.serve(await verifiedDomain(env.server, env.key, 'example.com'));
}, 30_000);
afterAll(async () => {
  await env?.stop();
  await sink?.close();
});

/** The JSON values a block printed one after another (curl -s adds no newline between them). */
function answers(output: string): any[] {
  const values: any[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < output.length; i++) {
    const char = output[i]!;
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{') {
      if (depth++ === 0) start = i;
    } else if (char === '}' && --depth === 0) values.push(JSON.parse(output.slice(start, i + 1)));
  }
  return values;
}

describe("docs/automations.md's examples", () => {
  it('run as written: a welcome series and an event automation made, an event posted, counters and runs read, paused, resumed and edited', async () => {
    const ok = (method: string, path: string, body?: unknown) => expectOk(env.server, env.key, method, path, body);
    const template = async (name: string) => (await ok('POST', '/v1/templates', { name, subject: name, html: `<p>${name}</p>` })).id as string;
    const book = await ok('POST', '/v1/contactBooks', { name: 'Readers' });
    const vars: NodeJS.ProcessEnv = {
      PATH: process.env.PATH, API: `${env.server.url}/v1`, KEY: env.key, BOOK: book.id,
      WELCOME: await template('Welcome'), THANKS: await template('Thanks'), AGAIN: await template('Again'), TRIAL: await template('Your {{plan}} trial'),
    };
    const blocks = await sectionBlocks('docs/automations.md', '## The API', 'sh');
    expect(blocks).toHaveLength(4);
    const run = async (block: string) => answers((await runShellBlocks([block], vars, env.server.url)).outputs[0]!);

    const [welcome] = await run(blocks[0]!);
    expect(welcome).toMatchObject({ name: 'Welcome series', status: 'ACTIVE', runs: { active: 0, completed: 0, exited: 0 } });
    expect(welcome.steps.map((step: { id: string }) => step.id)).toEqual(['welcome', 'pause', 'opened']);

    const [trial, event] = await run(blocks[1]!);
    expect(trial).toMatchObject({ name: 'Trial started', status: 'ACTIVE', allowReentry: true });
    expect(event).toMatchObject({ runsStarted: 1 });
    // The event's new contact was added to the book: it walks the welcome series too.
    await waitFor('the welcome sent', async () => sink.received.filter((m) => m.rcptTo.includes('ann@example.org')).length, (n) => n >= 1);

    Object.assign(vars, { AUTOMATION: welcome.id, CONTACT: event.contactId });
    const [read, runs] = await waitFor('ann waiting after the welcome', () => run(blocks[2]!), ([, r]) => r.data[0]?.stepId === 'pause');
    expect(read.counters.map((c: { stepId: string }) => c.stepId)).toEqual(['welcome', 'pause', 'opened', 'thanks', 'again']);
    expect(read.counters[0]).toEqual({ stepId: 'welcome', entered: 1, waiting: 0, completed: 1, exited: 0 });
    expect(runs).toMatchObject({ total: 1, data: [{ email: 'ann@example.org', status: 'ACTIVE', stepId: 'pause' }] });
    expect(runs.data[0].history[0]).toMatchObject({ stepId: 'welcome', type: 'send' });

    const [paused, resumed, edited] = await run(blocks[3]!);
    expect([paused.status, resumed.status, edited.status]).toEqual(['PAUSED', 'ACTIVE', 'ACTIVE']);
    expect(edited.steps.map((step: { id: string; type: string }) => step.type)).toEqual(['send', 'wait', 'update_contact']);
    expect(edited.steps.slice(0, 2).map((step: { id: string }) => step.id)).toEqual(['welcome', 'pause']);
    const [still] = (await ok('GET', `/v1/automations/${welcome.id}/runs?contactId=${event.contactId}`)).data;
    expect(still.stepId, 'the edit kept the run at its step').toBe('pause');
  }, 60_000);
});
