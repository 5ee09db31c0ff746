import { z } from 'zod';
import { defineRoute } from '../http/route.js';
import { SANDBOX_DOMAIN } from '../sending/sandbox.js';
import * as service from '../services/domains.js';

const TAG = 'Domains';

const status = z.enum(['NOT_STARTED', 'PENDING', 'SUCCESS', 'FAILED', 'TEMPORARY_FAILURE']);

export const domainSchema = z.object({
  id: z.number().int(),
  name: z.string().describe('Lower-case ASCII (punycode) form'),
  teamId: z.number().int(),
  status,
  sandbox: z
    .boolean()
    .describe(
      `The sandbox domain (${SANDBOX_DOMAIN}) every team has: SUCCESS with no DNS records, its mail captured and ` +
        'never relayed; sending from it works only with the capture transport (no SMTP_URL). It cannot be deleted',
    ),
  region: z.string(),
  clickTracking: z.boolean(),
  openTracking: z.boolean(),
  publicKey: z.string().describe('Base64 DKIM public key, the p= of the DKIM record'),
  dkimStatus: status.describe('Status of the DKIM record at the last check'),
  spfDetails: status.describe('Status of the SPF record at the last check'),
  dmarcAdded: z.boolean(),
  isVerifying: z.boolean(),
  errorMessage: z.string().nullable(),
  subdomain: z.string().nullable().describe('The part of the name left of the registrable domain; null at the apex'),
  verificationError: z.string().nullable().describe('What the last check found wrong, record by record'),
  lastCheckedTime: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  dnsRecords: z.array(
    z.object({
      type: z.enum(['TXT', 'MX']),
      name: z.string().describe('Relative to the registrable domain, as DNS providers expect'),
      value: z.string(),
      ttl: z.string(),
      priority: z.string().nullable(),
      status,
      recommended: z.boolean(),
    }),
  ),
  ipPool: z.string().describe('The IP pool (IP_POOLS) its mail leaves from under direct delivery (SMTP_URL=direct); `default` unless set'),
  warmup: z
    .object({
      enabled: z.boolean(),
      day: z.number().int().nullable().describe('The day of warm-up today is, the first being 1'),
      limitToday: z.number().int().nullable().describe("Today's cap on attempts; null once the ramp is over (or warm-up is off)"),
      sentToday: z.number().int().nullable().describe('Attempts made today'),
      dailyLimits: z.array(z.number().int()).nullable().describe('The caps given, day by day; null: 50, doubling each day until past 100,000'),
    })
    .describe('A daily cap on the domain\'s mail while receivers learn to trust it; mail past the cap waits for the next UTC day, transactional mail first'),
  warnings: z
    .array(z.string())
    .describe(
      "What in the server's configuration keeps this domain's mail from working beyond the server's own machine " +
        '(links or DNS records on localhost, say), each naming the setting to change; empty when nothing does',
    ),
});

const domainParams = z.object({ id: z.string() });
const SCOPE_NOTE = 'A key scoped to a domain may only use its own domain id; any other id is 403.';

export const domainRoutes = [
  defineRoute({
    method: 'get',
    path: '/domains',
    tag: TAG,
    summary: 'List domains',
    description: `The team's own domains, newest first, then its sandbox domain (${SANDBOX_DOMAIN}). A key scoped to a domain sees only that domain.`,
    response: z.array(domainSchema),
    handler: ({ deps, auth }) => service.listDomains(deps, auth),
  }),
  defineRoute({
    method: 'post',
    path: '/domains',
    tag: TAG,
    summary: 'Add a sending domain',
    description:
      'International names are stored in punycode. `region` defaults to the first configured region. ' +
      'Answers the domain, NOT_STARTED, with the DNS records to create. Keys scoped to a domain may not add domains.',
    body: z.object({ name: z.string().max(1000), region: z.string().max(64).optional() }),
    response: domainSchema,
    handler: ({ deps, auth, body }) => service.createDomain(deps, auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/domains/{id}',
    tag: TAG,
    summary: 'Get a domain',
    description: SCOPE_NOTE,
    params: domainParams,
    response: domainSchema,
    handler: ({ deps, auth, params }) => service.getDomain(deps, auth, params),
  }),
  defineRoute({
    method: 'patch',
    path: '/domains/{id}',
    tag: TAG,
    summary: 'Change tracking, IP pool or warm-up',
    description:
      'Open and click tracking; `ipPool`, one of the pools this server has (IP_POOLS; an unknown one is 400); `warmup`: ' +
      '`{ "enabled": true }` starts the ramp today (50, doubling each day, off past 100,000), `dailyLimits` gives the caps ' +
      `day by day instead, \`{ "enabled": false }\` ends it. ${SCOPE_NOTE}`,
    params: domainParams,
    body: z.object({
      openTracking: z.boolean().optional(),
      clickTracking: z.boolean().optional(),
      ipPool: z.string().min(1).max(64).optional(),
      warmup: z
        .object({
          enabled: z.boolean(),
          dailyLimits: z.array(z.number().int().min(0).max(100_000_000)).min(1).max(365).optional(),
        })
        .optional(),
    }),
    response: domainSchema,
    handler: ({ deps, auth, params, body }) => service.updateDomain(deps, auth, { ...params, ...body }),
  }),
  defineRoute({
    method: 'delete',
    path: '/domains/{id}',
    tag: TAG,
    summary: 'Delete a domain',
    description: `API keys scoped to the domain are deleted with it. The sandbox domain cannot be deleted (409). ${SCOPE_NOTE}`,
    params: domainParams,
    response: z.object({ id: z.number().int(), success: z.boolean(), message: z.string() }),
    handler: ({ deps, auth, params }) => service.deleteDomain(deps, auth, params),
  }),
  defineRoute({
    method: 'put',
    path: '/domains/{id}/verify',
    tag: TAG,
    summary: 'Verify the DNS records now',
    description:
      'Moves the domain to PENDING and checks its records at once, then with backoff until the verification ' +
      `window ends. A verified domain stays SUCCESS and is re-checked now; the sandbox domain has nothing to check. ${SCOPE_NOTE}`,
    params: domainParams,
    response: z.object({ message: z.string() }),
    handler: ({ deps, auth, params }) => service.verifyDomain(deps, auth, params),
  }),
];
