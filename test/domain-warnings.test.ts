import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, signedIn } from './helpers/browser.js';
import { createDomain } from './helpers/domains.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';

// A first try on one machine works with the defaults; the same defaults would fail silently once
// real mail goes out. A domain's answer and its page say so, naming the variable to set.

/** The test servers' defaults: no relay, PUBLIC_URL on 127.0.0.1, so the MX record on localhost. */
let local: TestServer;
let localKey: string;
let localTeam: number;
/** Set up for the internet: a relay, a public address, the MX and SPF records following it. */
let world: TestServer;
let worldKey: string;
let worldTeam: number;
let browser: Browser;

beforeAll(async () => {
  [local, world, browser] = await Promise.all([
    startTestServer(),
    startTestServer({ SMTP_URL: 'smtps://relay.example.com:465', PUBLIC_URL: 'https://mail.example.com' }),
    launchBrowser(),
  ]);
  ({ teamId: localTeam, apiKey: localKey } = await local.team());
  ({ teamId: worldTeam, apiKey: worldKey } = await world.team());
});
afterAll(async () => {
  await browser?.close();
  await local?.stop();
  await world?.stop();
});

describe("a domain's warnings", () => {
  it('on a server with one-machine defaults, the domain says what will not work beyond it, each naming the variable that fixes it', async () => {
    const domain = await createDomain(local, localKey, 'warned.example.com');
    expect(domain.dnsRecords.find((record: { type: string }) => record.type === 'MX').value).toBe('localhost');
    expect(domain.warnings).toEqual([
      expect.stringMatching(/^Mail is not delivered to anyone: with no SMTP_URL set, .* Set SMTP_URL /),
      expect.stringContaining(`point at ${local.deps.config.publicUrl}, which recipients cannot open: 127.0.0.1 is a loopback address, which only this machine or its network can reach. Set PUBLIC_URL `),
      expect.stringMatching(/^The MX record points at localhost, so bounces and complaints cannot come back: .* Set INBOUND_MX_HOST /),
      expect.stringMatching(/^The SPF record includes _spf\.localhost, .* Set SPF_INCLUDE /),
    ]);
    // Every read of the domain carries them.
    expect((await expectOk(local, localKey, 'GET', `/v1/domains/${domain.id}`)).warnings).toEqual(domain.warnings);
    const listed = (await expectOk(local, localKey, 'GET', '/v1/domains')).find((d: { id: number }) => d.id === domain.id);
    expect(listed.warnings).toEqual(domain.warnings);
  });

  it('on a server set up for the internet, the domain has none', async () => {
    const domain = await createDomain(world, worldKey, 'clean.example.com');
    expect(domain.dnsRecords.find((record: { type: string }) => record.type === 'MX').value).toBe('mail.example.com');
    expect(domain.warnings).toEqual([]);
  });

  it('the OpenAPI document shows warnings in the Domain resource, a list of strings', async () => {
    const document = await expectOk(local, undefined, 'GET', '/v1/openapi.json');
    const domain = document.paths['/v1/domains/{id}'].get.responses['200'].content['application/json'].schema;
    expect(domain.properties.warnings).toMatchObject({ type: 'array', items: { type: 'string' } });
    expect(domain.required).toContain('warnings');
  });

  it("the domain's page shows its warnings first, above its status and records; a domain without any shows no such panel", async () => {
    const warned = await createDomain(local, localKey, 'page.example.com');
    const person = await signedIn(browser, local, localTeam);
    await person.page.goto(`/domains/${warned.id}`);
    const panel = person.page.locator('#warnings');
    expect(await panel.getAttribute('role')).toBe('alert');
    expect(await panel.locator('li').allTextContents()).toEqual(warned.warnings);
    // Above the status panel and the records a person is about to copy.
    const order = await person.page.locator('main section').evaluateAll((sections) => sections.map((section) => section.id));
    expect(order.indexOf('warnings')).toBeLessThan(order.indexOf('status'));
    await screenshot(person.page, 'domain-warnings');
    await person.context.close();

    const clean = await createDomain(world, worldKey, 'page.example.com');
    const other = await signedIn(browser, world, worldTeam);
    await other.page.goto(`/domains/${clean.id}`);
    expect(await other.page.getByRole('heading', { level: 1 }).textContent()).toBe('page.example.com');
    expect(await other.page.locator('#warnings').count()).toBe(0);
    await other.context.close();
  });
});
